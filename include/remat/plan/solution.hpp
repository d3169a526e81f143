#pragma once

/// \file
/// What every solver returns: a status, the plan, the figures the method itself
/// claims, the simulator's figures for the same plan, bounds and statistics.

#include <remat/config.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <remat/plan/plan.hpp>
#include <remat/plan/simulate.hpp>

namespace remat {

enum class solve_status {
  optimal,     ///< proven optimal within the method's plan family and objective
  feasible,    ///< a valid plan; a cap or time limit stopped the proof (see the bounds)
  infeasible,  ///< no plan meets the budget (see smallest_feasible_budget)
  stopped,     ///< no plan: a cap or the time limit stopped the method before it completed one; nothing is proven
};

inline constexpr std::string_view to_string(solve_status s) noexcept {
  switch (s) {
    case solve_status::optimal: return "optimal";
    case solve_status::feasible: return "feasible";
    case solve_status::infeasible: return "infeasible";
    case solve_status::stopped: return "stopped";
  }
  return "?";
}

/// One count a method's search kept, under the method's own name for it
/// ("lower sets", "toggles taken", ...).
struct search_count {
  std::string_view name;
  std::uint64_t value = 0;
  friend bool operator==(const search_count&, const search_count&) = default;
};

/// What a search did: its wall time, what stopped it, and its counts in the
/// words of the method that counted them.
struct solve_stats {
  double seconds = 0;               ///< wall time of the solve
  bool cap_reached = false;         ///< a cap on states, labels or lower sets stopped it
  bool time_limit_reached = false;  ///< the time limit stopped it
  bool memory_limit_reached = false;  ///< the memory ceiling (solve_options::max_memory) stopped it
  bool work_limit_reached = false;    ///< the work limit (solve_options::work_limit) stopped it
  std::uint64_t work = 0;             ///< work units the search charged (time_budget::charge)
  std::vector<search_count> counts;

  /// The count named `name` (0 when the method kept none by that name).
  std::uint64_t count(std::string_view name) const noexcept {
    for (const search_count& c : counts)
      if (c.name == name) return c.value;
    return 0;
  }
  /// Sets the count named `name`, adding it when absent.
  void set(std::string_view name, std::uint64_t value) {
    for (search_count& c : counts)
      if (c.name == name) {
        c.value = value;
        return;
      }
    counts.push_back({name, value});
  }
  /// Adds another search's counts, name by name (the seconds are left to the caller).
  solve_stats& operator+=(const solve_stats& other) {
    for (const search_count& c : other.counts) set(c.name, count(c.name) + c.value);
    cap_reached = cap_reached || other.cap_reached;
    time_limit_reached = time_limit_reached || other.time_limit_reached;
    memory_limit_reached = memory_limit_reached || other.memory_limit_reached;
    work_limit_reached = work_limit_reached || other.work_limit_reached;
    return *this;
  }
};

/// Why a plan is not proven optimal, for programs (solution::message says it
/// for people).
enum class unproven_reason {
  none,        ///< proven: optimal, or infeasible by a proof
  no_proof,    ///< the method does not prove its plans optimal (a heuristic or a baseline)
  cap,         ///< a cap on states, labels or lower sets stopped the proof
  time_limit,  ///< the time limit stopped the proof
  memory_limit,  ///< the memory ceiling stopped the proof
  work_limit,    ///< the work limit stopped the proof
};

inline constexpr std::string_view to_string(unproven_reason r) noexcept {
  switch (r) {
    case unproven_reason::none: return "none";
    case unproven_reason::no_proof: return "no-proof";
    case unproven_reason::cap: return "cap";
    case unproven_reason::time_limit: return "time-limit";
    case unproven_reason::memory_limit: return "memory-limit";
    case unproven_reason::work_limit: return "work-limit";
  }
  return "?";
}

struct solution {
  solve_status status = solve_status::infeasible;
  /// The plan. When infeasible: empty for the stage programmes (exact, dp,
  /// chain, approx); the other methods keep the plan they found, and its
  /// figures say by how much it misses the budget.
  plan best;
  simulation figures;                 ///< the simulator's figures for `best`
  std::uint64_t claimed_peak = 0;     ///< the method's own peak (equals figures.peak_bytes)
  double claimed_recompute = 0;       ///< the method's own recompute time
  std::uint64_t peak_lower_bound = 0; ///< no plan of the family peaks lower (memory objective)
  /// Which floor peak_lower_bound is, for messages ("the window floor (...)"), where
  /// a method bounds its plan by the floors over every schedule; else empty.
  std::string peak_bound_name;
  double recompute_lower_bound = 0;   ///< no plan within the budget recomputes less (time objective)
  std::uint64_t smallest_feasible_budget = 0;  ///< when infeasible: the least budget that works
  /// When no plan meets the budget and the least that works is not known: the
  /// least peak of a plan found, a budget known to work (0: none found).
  std::uint64_t known_feasible_budget = 0;
  double objective = 0;               ///< the method's own objective value (e.g. Feng & Huang's bytes)
  double objective_lower_bound = 0;   ///< no plan scores below this on `objective` (ogc-exact; 0: none known)
  /// The plan, bounds and status cover stage plans run in the graph's order
  /// and in the consumers-first order (solve_options::order), not only the
  /// order `best.order` names.
  bool both_orders = false;
  /// The method whose search produced `best`: for `exact`, the member of
  /// its portfolio ("dp", "chain", "mincut", "ogc", "approx", "dp below
  /// <member>" when a search below a member's plan found it, "general-dp",
  /// "general local search", "stage split" for its general plans, "none"
  /// for regular training); else the method.
  std::string produced_by;
  /// The plans `status` and the bounds speak of ("stage plans", "general
  /// plans", ...; empty: the method proves nothing). solve() fills it in from
  /// proof_family(method) when the method leaves it empty.
  std::string proof_family;
  std::string message;                ///< a sentence for people
  solve_stats stats;

  /// Why the plan is not proven optimal (none when it is, or when no plan
  /// meets the budget and that is proven).
  unproven_reason unproven() const noexcept {
    if (status == solve_status::optimal || (status == solve_status::infeasible && !stats.cap_reached &&
                                             !stats.time_limit_reached && !stats.memory_limit_reached &&
                                             !stats.work_limit_reached))
      return unproven_reason::none;
    if (stats.memory_limit_reached) return unproven_reason::memory_limit;
    if (stats.work_limit_reached) return unproven_reason::work_limit;
    if (stats.time_limit_reached) return unproven_reason::time_limit;
    if (stats.cap_reached) return unproven_reason::cap;
    return unproven_reason::no_proof;
  }
};

}  // namespace remat
