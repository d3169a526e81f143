#pragma once

/// \file
/// The header-only core: graph concepts and remat::graph, the plan form and its
/// builders, the simulator, bounds and baseline plans. File I/O lives in
/// <remat/io/...> (it needs nlohmann/json).

#include "baselines.hpp"
#include "bounds.hpp"
#include "config.hpp"
#include "costs.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "graph_concepts.hpp"
#include "node_set.hpp"
#include "schedule.hpp"
#include "simulate.hpp"
#include "units.hpp"
#include "version.hpp"
