#pragma once

/// \file
/// The model zoo: op-level graphs of well-known networks (models.hpp), the
/// network_builder they share (network_builder.hpp), NAS cell networks
/// (nas.hpp), generators for scale (generators.hpp) and the device profiles of
/// their time estimates (device.hpp). See docs/zoo.md.

#include <remat/config.hpp>

#include <remat/zoo/device.hpp>
#include <remat/zoo/generators.hpp>
#include <remat/zoo/models.hpp>
#include <remat/zoo/nas.hpp>
#include <remat/zoo/network_builder.hpp>
