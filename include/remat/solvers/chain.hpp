#pragma once

/// \file
/// The `chain` method: stage plans whose stages are intervals of the id order
/// (the prefix family of the lower-set programme, dp.hpp). Optimal over them,
/// which on a linear graph is every plan. O(n · |stage| · (|stage| + deg)).

#include <remat/config.hpp>

#include <remat/graph/graph.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/dp.hpp>

namespace remat {

using chain_options = stage_dp_options;

inline solution solve_chain(const graph& g, const chain_options& options = {}) {
  return solve_stage_family(g, dp_family::prefix, options);
}

}  // namespace remat
