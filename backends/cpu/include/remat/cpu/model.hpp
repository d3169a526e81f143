#pragma once

/// \file
/// remat::cpu::model: a remat::graph made runnable on the CPU. The CPU runtime
/// runs on the host model itself (remat/ops/host_model.hpp): its executor
/// reads and updates the parameters, running statistics and inputs where the
/// host model keeps them.

#include <remat/config.hpp>

#include <remat/ops/host_model.hpp>

namespace remat::cpu {

/// A graph with its parameters, batch-norm running statistics and input data,
/// parsed and initialised by ops::host_model. T is float or double.
template <class T>
using model = ops::host_model<T>;

}  // namespace remat::cpu
