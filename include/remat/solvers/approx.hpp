#pragma once

/// \file
/// The `approx` method: Kusumoto et al.'s approximate family of lower sets,
/// {∅} ∪ {↓v} ∪ {V} in every comparable pair (dp.hpp). Optimal over them.
/// O(n² · (n + m)); its lists of principal sets stop past 2²⁷ ids or the time
/// budget.

#include <remat/config.hpp>

#include <remat/graph/graph.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/dp.hpp>

namespace remat {

using approx_options = stage_dp_options;

inline solution solve_approx(const graph& g, const approx_options& options = {}) {
  return solve_stage_family(g, dp_family::principal, options);
}

}  // namespace remat
