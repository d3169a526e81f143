#pragma once

/// \file
/// Values added to a general plan's kept set while every step stays within a
/// byte ceiling. A kept value spares its recomputes (and those of ancestors
/// only it needed) at the price of being held from its forward step until
/// the backward that frees it. Keeping a value removes steps and holds no
/// other value longer, so after it each remaining step holds at most what
/// it held before plus the value: a value is added when the largest step of
/// that span, plus the added values already spanning it, plus its own bytes,
/// stays within the ceiling. The plan then never passes the ceiling, which
/// the simulator confirms after each round.
///
/// Each round takes the plan's recomputed values in turn, the first round by
/// recompute time per byte held, later ones by recompute time (the slack the
/// removed recomputes leave goes to what is recomputed most); it ends when a
/// round adds nothing. `exact` runs it on its general plans (what it saves:
/// docs/results-solvers.md, "Keeping nothing, then what fits").
/// Complexity: O(T log T + n log n + m) a round for a plan of T steps.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/general_local_search.hpp>

namespace remat {

namespace detail {

// Adds a value to every element of a range and gives the largest element of
// a range, in O(log size) each.
class range_add_max {
 public:
  explicit range_add_max(const std::vector<std::uint64_t>& values)
      : size_(values.size()), top_(4 * values.size()), added_(4 * values.size()) {
    if (size_ > 0) build(1, 0, size_ - 1, values);
  }
  std::uint64_t largest(std::size_t first, std::size_t last) const { return largest(1, 0, size_ - 1, first, last); }
  void add(std::size_t first, std::size_t last, std::uint64_t amount) { add(1, 0, size_ - 1, first, last, amount); }

 private:
  void build(std::size_t k, std::size_t lo, std::size_t hi, const std::vector<std::uint64_t>& values) {
    if (lo == hi) {
      top_[k] = values[lo];
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    build(2 * k, lo, mid, values);
    build(2 * k + 1, mid + 1, hi, values);
    top_[k] = std::max(top_[2 * k], top_[2 * k + 1]);
  }
  std::uint64_t largest(std::size_t k, std::size_t lo, std::size_t hi, std::size_t first, std::size_t last) const {
    if (last < lo || hi < first) return 0;
    if (first <= lo && hi <= last) return top_[k];
    const std::size_t mid = lo + (hi - lo) / 2;
    return added_[k] + std::max(largest(2 * k, lo, mid, first, last), largest(2 * k + 1, mid + 1, hi, first, last));
  }
  void add(std::size_t k, std::size_t lo, std::size_t hi, std::size_t first, std::size_t last, std::uint64_t amount) {
    if (last < lo || hi < first) return;
    if (first <= lo && hi <= last) {
      top_[k] += amount;
      added_[k] += amount;
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    add(2 * k, lo, mid, first, last, amount);
    add(2 * k + 1, mid + 1, hi, first, last, amount);
    top_[k] = added_[k] + std::max(top_[2 * k], top_[2 * k + 1]);
  }

  std::size_t size_;
  std::vector<std::uint64_t> top_, added_;  // a subtree's largest element; what was added to all of it
};

}  // namespace detail

struct keep_within_result {
  general_plan plan;
  schedule steps;  ///< plan's schedule
  simulation figures;
  std::size_t added = 0;   ///< values added to the kept set
  std::size_t rounds = 0;  ///< rounds run
  /// The last round added nothing: no value still recomputed fits (else
  /// the rounds ran out, or the simulator found a round over the ceiling).
  bool settled = false;
};

/// As keep_within below, from `start`'s schedule and its simulation with
/// the timeline recorded, where the caller has them already.
inline keep_within_result keep_within(const graph& g, general_plan start, schedule steps,
                                      simulation start_figures, std::uint64_t ceiling) {
  const std::size_t n = g.size();
  simulate_options timeline;
  timeline.record_timeline = true;
  keep_within_result out;
  out.figures = std::move(start_figures);
  out.plan = std::move(start);
  constexpr std::size_t max_rounds = 8;  // bounds the work; the plans measured settle by the third
  // Every plan taken stays within the ceiling: a start above it is returned as it is.
  while (out.figures.peak_bytes <= ceiling && !steps.empty() && out.rounds < max_rounds) {
    ++out.rounds;
    std::vector<std::uint64_t> memory(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) memory[i] = out.figures.timeline[i].total();
    // Each value's span if kept: its forward step to the step that would
    // free it (after its own backward when that reads it, else after the
    // last of its consumers' backwards), or to its last recompute's free.
    std::vector<std::size_t> computed_at(n, 0), backward_at(n, 0), last_free(n, 0);
    std::vector<double> recompute(n, 0.0);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const node_id v = steps[i].node;
      switch (steps[i].kind) {
        case step_kind::compute: computed_at[v] = i; break;
        case step_kind::recompute: recompute[v] += g.time(v); break;
        case step_kind::free: last_free[v] = i; break;
        case step_kind::backward: backward_at[v] = i; break;
      }
    }
    std::vector<node_id> candidates;
    for (node_id v = 0; v < n; ++v)
      if (recompute[v] > 0 && !out.plan.kept.contains(v)) candidates.push_back(v);
    const bool per_byte = out.rounds == 1;
    auto gain = [&](node_id v) { return per_byte ? recompute[v] / static_cast<double>(g.bytes(v) + 1) : recompute[v]; };
    std::stable_sort(candidates.begin(), candidates.end(), [&](node_id a, node_id b) { return gain(a) > gain(b); });
    detail::range_add_max held(memory);
    general_plan next = out.plan;
    std::size_t added = 0;
    for (const node_id v : candidates) {
      std::size_t end = last_free[v];
      if (reads_output(g.reads(v))) end = std::max(end, backward_at[v]);
      else
        for (node_id c : g.successors(v)) end = std::max(end, backward_at[c]);
      if (held.largest(computed_at[v], end) + g.bytes(v) > ceiling) continue;
      held.add(computed_at[v], end, g.bytes(v));
      next.kept.insert(v);
      ++added;
    }
    if (added == 0) {
      out.settled = true;
      break;
    }
    schedule tried = next.steps(g);
    simulation figures = simulate(g, tried, timeline);
    if (figures.peak_bytes > ceiling) break;
    out.plan = std::move(next);
    out.figures = std::move(figures);
    out.added += added;
    steps = std::move(tried);
  }
  out.figures.timeline.clear();
  out.figures.timeline.shrink_to_fit();
  out.steps = std::move(steps);
  return out;
}

/// `start` with values added to its kept set while every step stays within
/// `ceiling` (see the file comment); `start` itself when it passes the
/// ceiling. Never raises the peak above max(ceiling, start's), never raises
/// the recompute.
inline keep_within_result keep_within(const graph& g, general_plan start, std::uint64_t ceiling) {
  simulate_options timeline;
  timeline.record_timeline = true;
  schedule steps = start.steps(g);
  simulation figures = simulate(g, steps, timeline);
  return keep_within(g, std::move(start), std::move(steps), std::move(figures), ceiling);
}

}  // namespace remat
