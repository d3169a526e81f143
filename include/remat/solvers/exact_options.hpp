#pragma once

/// \file
/// The `exact` method's options (exact.hpp).

#include <remat/config.hpp>

#include <chrono>
#include <cstdint>
#include <limits>

#include <remat/analysis/orders.hpp>
#include <remat/solvers/common.hpp>
#include <remat/time_budget.hpp>

namespace remat {

/// `exact` searches general plans on graphs of at most this many computed
/// nodes: past it the kept subsets of a stage outgrow any `general_time_limit`
/// worth waiting (measured in docs/results-solvers.md, "The exact programme
/// over general plans").
inline constexpr std::size_t exact_general_max_nodes = 16;

/// Past exact_general_max_nodes, `exact` also weighs the general plan that
/// keeps nothing on graphs of at most this many computed nodes: its schedule
/// holds up to n²/2 recomputes (2·10⁶ here).
inline constexpr std::size_t exact_keep_nothing_max_nodes = 2000;

/// The longest run of the execution order a stage may be when `exact`
/// splits stages over it (split_stages): the shortest that reached
/// PSPNet's and the ResNets' least peaks; longer runs price more stages
/// (docs/results-solvers.md, "Stages split over the execution order").
inline constexpr std::size_t exact_split_stage_nodes = 8;

/// The longest runs `exact` widens that split to where longer runs keep
/// lowering the peak (wide layered graphs); each doubling prices two to
/// three times the stages (docs/results-solvers.md, "Wider runs where they
/// pay").
inline constexpr std::size_t exact_split_widest_nodes = 256;

/// The computed nodes of the window `exact` reorders around the backward its
/// best plan peaks for (window_floor_order): 64 do not complete within the
/// window floor's work limit on NASNet's reduction cell, and 48 lower
/// DARTS's and NASNet's plans as much (docs/results-solvers.md, "The window
/// floor's order inside a large graph").
inline constexpr std::size_t exact_window_order_nodes = 48;

/// The same for the split that then looks for the least recompute within
/// the best plan's peak, with its kept values: longer runs share more of
/// what they recompute, at about twice the stages priced for twice the
/// length (docs/results-solvers.md, "Stages split over the execution order").
inline constexpr std::size_t exact_split_recompute_nodes = 16;

/// Past exact_general_max_nodes (memory objective), how many budgets below
/// the least peak found `exact` gives a local search from min-cut's stages at
/// most, each halfway between the per-op floor and the lowest peak found; the
/// first it misses ends them (none when it misses the least peak itself).
inline constexpr int exact_budget_descent_rounds = 4;

struct exact_options {
  objective goal = objective::memory;
  std::uint64_t budget = no_budget;  ///< the time objective's byte budget
  /// Above this many lower sets the programme over all of them gives way to
  /// the fallbacks (branchy graphs past ~2·10⁴ lower sets take it from
  /// seconds to minutes).
  std::uint64_t max_lower_sets = 20000;
  time_budget time;
  bool preserve_gradient_order = true;
  /// The most an unproven plan's lower bound may take (subgraph_bound.hpp),
  /// within the time budget; 0 keeps the per-op floor.
  std::chrono::milliseconds bound_time_limit{250};
  /// `best`: both orders; `automatic`: both past `max_lower_sets` only.
  order_choice order = order_choice::automatic;
  /// The most the search over general plans below the stage optimum may take
  /// (graphs of up to exact_general_max_nodes computed nodes; of work, under
  /// a work limit), within the time budget; 0 skips it.
  std::chrono::milliseconds general_time_limit{250};
  /// Graphs of more than exact_general_max_nodes computed nodes (memory
  /// objective): the work units a local search over general plans may do
  /// first, from min-cut stages' kept values with a stage per node
  /// (general_local_search.hpp), weighed against the plan that keeps
  /// nothing. A fixed count, so its plan does not depend on the machine; 0
  /// skips both and leaves stage plans alone.
  std::uint64_t general_search_work = 30'000'000;
  /// The most those general plans may recompute, in forward passes (a stage
  /// plan recomputes at most one; lazy recompute can redo a value for every
  /// backward that reads it). A search held to it starts over it and finds
  /// less: 1.0 leaves ResNet-101 and the DenseNets their stage optima.
  double general_max_recompute = std::numeric_limits<double>::infinity();
  /// Time objective, no stage plan within the budget: the exact programme
  /// also finds the least budget one meets (dp_options::least_budget_if_infeasible).
  /// solve_exact leaves it out while a general plan may still meet the budget.
  bool least_budget_if_infeasible = true;
};

}  // namespace remat
