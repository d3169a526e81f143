#pragma once

/// \file
/// The label engine of the lower-set programme (Kusumoto et al., NeurIPS
/// 2019): over a stage_graph, the least peak in one backward pass, Pareto
/// labels (kept bytes, peak so far, recompute) for the least recompute within
/// a peak or budget, and plans sampled along the frontier. One engine serves
/// solve_dp (dp.hpp) and the Pareto frontier (pareto.hpp); a caller enumerates
/// once and may run several label phases over the same stages.

#include <remat/config.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>


#include <remat/detail/block_vector.hpp>
#include <remat/graph/graph.hpp>
#include <remat/solvers/dp_options.hpp>
#include <remat/solvers/stage_graph.hpp>

namespace remat::detail {

/// (peak, recompute) of complete plans, by rising peak and falling recompute.
using known_points = std::vector<std::pair<std::uint64_t, double>>;

/// Plans sampled along a frontier (dp_engine::sample_frontier).
struct frontier_sampling {
  std::vector<frontier_point> plans;  ///< in the order sampled
  known_points staircase;             ///< their figures, by rising peak and falling recompute
  bool all = false;                   ///< every budget got its least-recompute plan
  bool timed_out = false;             ///< the time limit ended the sampling
};

/// Recompute times summed in different orders differ in their last bits; a
/// frontier point must save more than that over the point before it.
inline bool saves_recompute(double candidate, double best) noexcept {
  return std::isinf(best) ? candidate < best : candidate < best - 1e-12 * best;
}

struct dp_label {
  std::uint64_t kept;
  std::uint64_t peak;
  double recompute;
  std::uint32_t state;      // the lower set it belongs to
  std::uint32_t previous;   // label it extends (npos for the start)
};

/// Labels over the states and stages of a stage_graph.
class dp_engine : public stage_graph {
 public:
  dp_engine(const graph& g, const dp_options& options) : stage_graph(g, options) {}

  /// Phase 2: the least peak of any chain of kept stages, in one backward
  /// pass. A chain run from a state holding K kept bytes peaks at K plus a
  /// part that depends on the chain only: max(p₁, k₁ + the part of the rest),
  /// rising with the rest's part, so the least part of each state composes
  /// from the least parts of its successors (stage costs do not depend on what
  /// was kept, only on how much). The empty chain (a graph of inputs alone)
  /// peaks at the resident bytes.
  std::uint64_t least_peak(std::uint32_t final) const {
    return std::max(resident_, least_rests(final, unreachable)[0]);
  }

  /// Per state, the least r over chains of stages within `budget` from it to
  /// `final` (unreachable if none): such a chain run from a state holding K
  /// kept bytes peaks at K + r.
  std::vector<std::uint64_t> least_rests(std::uint32_t final, std::uint64_t budget) const {
    std::vector<std::uint64_t> rest(states_.size(), unreachable);
    rest[final] = 0;
    // a stage's target is expanded after its source, so its stages come later
    for (auto t = transitions_.rbegin(); t != transitions_.rend(); ++t)
      if (rest[t->to] != unreachable && t->peak <= budget)
        rest[t->from] = std::min(rest[t->from], std::max(t->peak, t->kept_added + rest[t->to]));
    return rest;
  }

  /// The states of a least-kept-bytes chain within `budget` (empty if none).
  std::vector<std::uint32_t> least_kept_path(std::uint64_t budget, std::uint32_t final) {
    std::vector<std::uint64_t> best(states_.size(), unreachable);
    std::vector<std::uint32_t> via(states_.size(), npos);
    best[0] = 0;
    for (const transition& t : transitions_)
      if (best[t.from] != unreachable && best[t.from] + t.peak <= budget && best[t.from] + t.kept_added < best[t.to]) {
        best[t.to] = best[t.from] + t.kept_added;
        via[t.to] = t.from;
      }
    if (best[final] == unreachable) return {};
    std::vector<std::uint32_t> chain{final};
    while (chain.back() != 0) chain.push_back(via[chain.back()]);
    std::reverse(chain.begin(), chain.end());
    return chain;
  }

  /// The plan to stand in where the labels stopped at their cap or the time
  /// limit: of the least-kept chain within `budget` and the chain the last
  /// label phase's beam found (if it ran and fits), the one that recomputes
  /// less (empty if neither exists). The beam's plan is a real one, often
  /// near the optimum; the least-kept chain may recompute far more than a
  /// plan found at a smaller budget.
  std::vector<std::uint32_t> stand_in_chain(std::uint64_t budget, std::uint32_t final) {
    std::vector<std::uint32_t> chain = least_kept_path(budget, final);
    if (beam_chain_.empty()) return chain;
    const auto [peak, recompute] = chain_figures(beam_chain_);
    if (peak <= budget && (chain.empty() || recompute < chain_figures(chain).second)) return beam_chain_;
    return chain;
  }

  /// The figures of a chain of states (the stages between them).
  std::pair<std::uint64_t, double> chain_figures(const std::vector<std::uint32_t>& chain) const {
    std::uint64_t kept = 0, peak = resident_;  // what an empty chain holds
    double recompute = 0;
    std::size_t k = 0;
    for (const transition& t : transitions_) {
      if (k + 1 >= chain.size()) break;
      if (t.from == chain[k] && t.to == chain[k + 1]) {
        peak = std::max(peak, kept + t.peak);
        kept += t.kept_added;
        recompute += t.recompute;
        ++k;
      }
    }
    return {peak, recompute};
  }

  /// Phase 3: Pareto labels (kept, peak, recompute) within `budget`; returns
  /// the final state's front. In three dimensions, a label is dropped when a
  /// plan in `known` beats everything it can still become. `known_recompute`:
  /// the recompute of a plan known to fit the budget (labels that cannot
  /// beat it are dropped, ties kept).
  std::vector<dp_label> labels_within(std::uint64_t budget, std::uint32_t final, bool two_dimensional,
                                      const known_points& known = {},
                                      double known_recompute = std::numeric_limits<double>::infinity()) {
    two_dimensional_ = two_dimensional;
    labels_capped_ = false;
    beam_chain_.clear();
    // Backward over the kept stages: the largest kept bytes from which each
    // state can still finish within the budget, and the least recompute left.
    const std::size_t count = states_.size();
    std::vector<std::uint64_t> most_kept(count, 0);
    std::vector<char> finishes(count, 0);
    std::vector<double> least_left(count, std::numeric_limits<double>::infinity());
    finishes[final] = 1;
    most_kept[final] = unreachable;
    least_left[final] = 0;
    for (std::size_t k = transitions_.size(); k-- > 0;) {
      const transition& t = transitions_[k];
      if (!finishes[t.to] || t.peak > budget || most_kept[t.to] < t.kept_added) continue;
      const std::uint64_t here = std::min(budget - t.peak, most_kept[t.to] - t.kept_added);
      if (!finishes[t.from] || here > most_kept[t.from]) most_kept[t.from] = here;
      finishes[t.from] = 1;
      least_left[t.from] = std::min(least_left[t.from], t.recompute + least_left[t.to]);
    }
    // Up to flat_kept[s] kept bytes, a state still finishes with its least
    // recompute left (over stages that reach it). Labels there differ only in
    // recompute, so one of them dominates every label at s that recomputes
    // more, whatever it keeps: where memory is slack (the cheap tail of a
    // ResNet) the Pareto fronts collapse to a point.
    std::vector<std::uint64_t> flat_kept(count, 0);
    std::vector<char> flat(count, 0);
    flat[final] = 1;
    flat_kept[final] = unreachable;
    for (std::size_t k = transitions_.size(); k-- > 0;) {
      const transition& t = transitions_[k];
      if (!flat[t.to] || t.peak > budget || flat_kept[t.to] < t.kept_added ||
          t.recompute + least_left[t.to] != least_left[t.from])
        continue;
      const std::uint64_t here = std::min(budget - t.peak, flat_kept[t.to] - t.kept_added);
      if (!flat[t.from] || here > flat_kept[t.from]) flat_kept[t.from] = here;
      flat[t.from] = 1;
    }
    std::vector<double> flat_best(count, std::numeric_limits<double>::infinity());
    // Three dimensions: from a state holding K kept bytes, every way to finish
    // peaks at K + least_rest or more, so a label's peak may be raised to
    // that without changing what any completion of it peaks at. Labels below
    // that line then differ only in kept bytes and recompute, and dominate
    // each other far more often.
    const std::vector<std::uint64_t> least_rest =
        two_dimensional ? std::vector<std::uint64_t>{} : least_rests(final, budget);
    // Any complete plan bounds the recompute: follow the least-kept stages.
    std::vector<std::uint64_t> kept(count, unreachable);
    std::vector<double> spent(count, 0);
    kept[0] = 0;
    for (const transition& t : transitions_) {
      if (kept[t.from] == unreachable || kept[t.from] + t.peak > budget || kept[t.from] > most_kept[t.from]) continue;
      const std::uint64_t next = kept[t.from] + t.kept_added;
      if (next < kept[t.to] || (next == kept[t.to] && spent[t.from] + t.recompute < spent[t.to])) {
        kept[t.to] = next;
        spent[t.to] = spent[t.from] + t.recompute;
      }
    }
    double recompute_bound =
        std::min(known_recompute, kept[final] == unreachable ? std::numeric_limits<double>::infinity() : spent[final]);
    // Two dimensions, once the labels grow many: the least recompute left by
    // kept bytes, and the plan a beam guided by it finds, which bounds the
    // recompute far closer. Computed only then: on most graphs the labels
    // stay few, and the table would cost more than it saves. Each time the
    // labels grow 16 times more, the floor is built again with 8 times the
    // levels: a coarse floor lets through labels a finer one drops, and
    // where they still grow, the finer table costs less than they do.
    recompute_floor left;
    std::uint64_t floor_after = options_.recompute_floor_after;
    std::size_t floor_scale = 1;
    double beam_best = std::numeric_limits<double>::infinity();

    labels_.clear();
    fronts_.assign(count, {});
    pending_.assign(two_dimensional ? 0 : count, {});
    pending_total_ = 0;
    push_label(0, {0, resident_, 0, 0, npos});  // the start holds the resident bytes
    for (const transition& t : transitions_) {
      if (two_dimensional && floor_scale <= most_floor_scale && labels_.size() >= floor_after) {
        left = recompute_floor(*this, budget, final, finishes, most_kept, floor_scale);
        std::uint64_t extended = 0;
        std::vector<std::uint32_t> chain;
        const double beam = beam_recompute(budget, final, most_kept, left, extended, chain);
        if (beam < beam_best) {
          beam_best = beam;
          beam_chain_ = std::move(chain);
        }
        recompute_bound = std::min(recompute_bound, beam);
        if (options_.time.charge(left.steps() * floor_step_work + extended * beam_step_work))
          stats_.time_limit_reached = true;
        floor_after = floor_after > unreachable / 16 ? unreachable : std::max<std::uint64_t>(floor_after, 1) * 16;
        floor_scale *= 8;
      }
      if (!two_dimensional && !pending_[t.from].empty()) settle(t.from);
      if (fronts_[t.from].empty() || !finishes[t.to]) continue;
      const std::vector<front_entry>& front = fronts_[t.from];  // push_label only touches t.to ≠ t.from
      auto first = front.begin(), last = front.end();
      if (two_dimensional) {
        // The staircase rises in kept bytes and falls in recompute, and each
        // test that drops a label cuts one end of it: search for the rest. A
        // flat label dominates by more than rounding (the two may finish on
        // different stages).
        first = std::partition_point(first, last, [&](const front_entry& e) {
          const double r = e.recompute;
          return saves_recompute(flat_best[t.from], r) ||
                 r + t.recompute + least_left[t.to] > recompute_bound * (1 + 1e-12) + 1e-300;
        });
        last = std::partition_point(first, last, [&](const front_entry& e) {
          const std::uint64_t k = e.kept;
          return k + t.peak <= budget && k + t.kept_added <= most_kept[t.to];
        });
      }
      for (auto at = first; at != last; ++at) {
        const front_entry x = *at;
        const std::uint64_t next_kept = x.kept + t.kept_added;
        std::uint64_t peak = std::max(x.peak, x.kept + t.peak);
        if (!two_dimensional && least_rest[t.to] != unreachable) peak = std::max(peak, next_kept + least_rest[t.to]);
        const double recompute = x.recompute + t.recompute;
        if (peak > budget || next_kept > most_kept[t.to]) continue;
        if (!two_dimensional && beaten(known, peak, recompute + least_left[t.to])) continue;
        // A label that cannot beat a known complete plan is dropped; ties are kept
        // (they may have the lower peak the tie-break prefers).
        if (recompute + least_left[t.to] > recompute_bound * (1 + 1e-12) + 1e-300) continue;
        if (two_dimensional) {
          // summed in another order than the labels: more than rounding above
          if (recompute + left.at(t.to, next_kept) > recompute_bound * (1 + 1e-9) + 1e-300) continue;
          if (saves_recompute(flat_best[t.to], recompute)) continue;
          if (flat[t.to] && next_kept <= flat_kept[t.to]) flat_best[t.to] = std::min(flat_best[t.to], recompute);
        }
        push_label(t.to, {next_kept, peak, recompute, t.to, x.label});
        if (time_is_up()) break;  // a three-dimensional push can settle a front of thousands
      }
      if (labels_.size() + pending_total_ > options_.max_labels || time_is_up()) {
        labels_capped_ = true;
        return {};
      }
    }
    if (!two_dimensional && !pending_[final].empty()) settle(final);
    std::vector<dp_label> out;
    for (const front_entry& e : fronts_[final]) out.push_back(label_of(e));
    stats_.labels = labels_.size();
    return out;
  }

  /// Complete plans along the frontier within `budget`, cheaply: the least
  /// recompute (two-dimensional labels) at `samples` budgets from the least
  /// peak up to the peak of the least-recompute plan. Where a budget's labels
  /// outgrow their cap or the time limit, `stand_in` decides: take a
  /// least-kept plan within it, marked as not proven least recompute, and go
  /// on (unless the time is up), or end the sampling there.
  frontier_sampling sample_frontier(std::uint32_t final, std::uint64_t budget, std::uint64_t samples, bool stand_in) {
    frontier_sampling out;
    constexpr double none = std::numeric_limits<double>::infinity();
    // Adds the plan for `within` (`fits`: the recompute of a plan known to fit
    // it); false when the sampling ends.
    auto sample = [&](std::uint64_t within, double fits) {
      const std::vector<dp_label> front = labels_within(within, final, true, {}, fits);
      out.timed_out = stats_.time_limit_reached;
      if (!front.empty()) {
        const dp_label best = *std::min_element(front.begin(), front.end(), [](const auto& x, const auto& y) {
          return x.recompute != y.recompute ? x.recompute < y.recompute : x.peak < y.peak;
        });
        out.plans.push_back({best.peak, best.recompute, stages_of(best), {}});
        return true;
      }
      out.all = false;
      if (!stand_in) return false;
      const std::vector<std::uint32_t> chain = stand_in_chain(within, final);
      if (chain.empty()) return false;
      const auto [peak, recompute] = chain_figures(chain);
      out.plans.push_back({peak, recompute, stages_of_chain(chain), {}, false});
      return !out.timed_out;
    };
    const std::uint64_t low = least_peak(final);
    out.all = low <= budget;
    if (out.all && sample(low, none)) {
      double fits = out.plans.back().recompute;  // the least-peak plan fits every budget above it
      if (sample(budget, none)) {
        const std::uint64_t high = out.plans.back().peak;
        // Rising budgets: a plan within the last one fits the next, so its
        // recompute bounds the next one's labels.
        for (std::uint64_t i = 1; i < samples && high > low; ++i) {
          if (!sample(low + (high - low) / samples * i, fits)) break;
          fits = out.plans.back().recompute;
        }
      }
    }
    known_points figures;
    for (const frontier_point& p : out.plans) figures.emplace_back(p.peak, p.recompute);
    std::sort(figures.begin(), figures.end());
    for (const auto& point : figures)
      if (out.staircase.empty() || point.second < out.staircase.back().second) out.staircase.push_back(point);
    return out;
  }

  /// The stage assignment a label was reached by.
  std::vector<std::uint32_t> stages_of(const dp_label& label) const {
    std::vector<std::uint32_t> chain{label.state};
    for (std::uint32_t l = label.previous; l != npos; l = labels_[l].previous) chain.push_back(labels_[l].state);
    std::reverse(chain.begin(), chain.end());
    return stages_of_chain(chain);
  }

  /// The stage assignment of a chain of states.
  std::vector<std::uint32_t> stages_of_chain(const std::vector<std::uint32_t>& chain) const {
    std::vector<std::uint32_t> stage_of(g_.size(), 0);
    for (std::size_t k = 1; k < chain.size(); ++k) {
      const state& now = states_[chain[k]];
      const state& before = states_[chain[k - 1]];
      for (node_id v = 0; v < g_.size(); ++v)
        if (!g_.is_input(v) && in_state(now, v) && !in_state(before, v)) stage_of[v] = static_cast<std::uint32_t>(k - 1);
    }
    return stage_of;
  }

  bool labels_capped() const noexcept { return labels_capped_; }

 private:
  // Two-dimensional fronts (kept, recompute) suffice for the memory objective
  // (every complete plan within the least peak has that peak) and the time
  // objective (the peak only has to stay within the budget); they are kept as a
  // staircase sorted by kept bytes with strictly falling recompute. The full
  // frontier needs the peak too, and uses a plain list.
  void push_label(std::uint32_t s, dp_label label) {
    auto& front = fronts_[s];
    if (two_dimensional_) {
      auto kept_less = [](const front_entry& e, std::uint64_t kept) { return e.kept < kept; };
      auto at = std::lower_bound(front.begin(), front.end(), label.kept, kept_less);
      // the label before (less kept) or at the same kept bytes may dominate
      if (at != front.end() && at->kept == label.kept && at->recompute <= label.recompute) return;
      if (at != front.begin() && (at - 1)->recompute <= label.recompute) return;
      auto end = at;
      while (end != front.end() && end->recompute >= label.recompute) ++end;
      const front_entry entry = entry_of(label, static_cast<std::uint32_t>(labels_.size()));
      labels_.push_back({label.state, label.previous});
      if (end == at) {
        front.insert(at, entry);
      } else {
        *at = entry;
        front.erase(at + 1, end);
      }
      return;
    }
    // Three dimensions: labels wait until the front is needed (or they
    // outnumber it), then are settled together.
    std::vector<dp_label>& pending = pending_[s];
    pending.push_back(label);
    ++pending_total_;
    if (pending.size() >= std::max<std::size_t>(4096, 2 * front.size())) settle(s);
  }

  // Whether a known plan peaks no higher than `peak` and recomputes less than
  // `recompute` by more than rounding: then a label that peaks and recomputes
  // at least that much cannot add a point to the frontier.
  static bool beaten(const known_points& known, std::uint64_t peak, double recompute) {
    const auto above = std::upper_bound(known.begin(), known.end(), peak,
                                        [](std::uint64_t p, const auto& point) { return p < point.first; });
    return above != known.begin() && std::prev(above)->second < recompute * (1 - 4e-12);
  }

  // The three-dimensional front of s from its front and the labels pending
  // there, as pushing them one by one would leave it: a label is dropped when
  // another keeps, peaks and recomputes no more (on a tie the earlier one
  // stays). Sorted by kept bytes, a label is dropped exactly when one before
  // it peaks and recomputes no more, which a staircase of (peak, recompute)
  // answers in O(log): O(N log N) for N labels instead of a scan of the front
  // per label, which dominated the frontier's time.
  void settle(std::uint32_t s) {
    struct candidate {
      dp_label label;
      std::uint32_t index;  // in labels_, or npos while pending
    };
    std::vector<front_entry>& front = fronts_[s];
    std::vector<dp_label>& pending = pending_[s];
    std::vector<candidate> candidates;
    candidates.reserve(front.size() + pending.size());
    for (const front_entry& e : front) candidates.push_back({label_of(e), e.label});
    for (const dp_label& l : pending) candidates.push_back({l, npos});
    pending_total_ -= pending.size();
    pending = {};
    std::stable_sort(candidates.begin(), candidates.end(), [](const candidate& x, const candidate& y) {
      if (x.label.kept != y.label.kept) return x.label.kept < y.label.kept;
      if (x.label.peak != y.label.peak) return x.label.peak < y.label.peak;
      return x.label.recompute < y.label.recompute;
    });
    std::map<std::uint64_t, double> staircase;  // peak → recompute, falling as the peak rises
    front.clear();
    for (const candidate& c : candidates) {
      const std::uint64_t peak = c.label.peak;
      const double recompute = c.label.recompute;
      const auto above = staircase.upper_bound(peak);
      if (above != staircase.begin() && std::prev(above)->second <= recompute) continue;
      const auto first = staircase.lower_bound(peak);
      auto last = first;
      while (last != staircase.end() && last->second >= recompute) ++last;
      staircase.emplace_hint(staircase.erase(first, last), peak, recompute);
      if (c.index != npos) {
        front.push_back(entry_of(c.label, c.index));
      } else {
        front.push_back(entry_of(c.label, static_cast<std::uint32_t>(labels_.size())));
        labels_.push_back({c.label.state, c.label.previous});
      }
    }
  }

  // The least recompute left from each state by the kept bytes held there,
  // tabulated at up to `levels` levels per state: level j of s holds kept
  // bytes from j · 2^shift(s), and its entry is the least recompute left over
  // the stages that fit from there (the first stage feasible at the level's
  // lowest kept bytes, then the entry at what it keeps). Holding more only
  // removes stages and raises the levels after them, so an entry never
  // exceeds the recompute left from any kept bytes of its level: a label
  // that cannot beat a known plan by it is dropped. O(levels) per stage.
  class recompute_floor {
   public:
    recompute_floor() = default;
    // `scale`: the levels and the work they may take, times the first floor's.
    recompute_floor(const dp_engine& e, std::uint64_t budget, std::uint32_t final, const std::vector<char>& finishes,
                    const std::vector<std::uint64_t>& most_kept, std::size_t scale)
        : levels_(std::clamp<std::size_t>(
              std::min(level_steps * scale / std::max<std::size_t>(e.transitions_.size(), 1),
                       level_entries / std::max<std::size_t>(e.states_.size(), 1)),
              16, 1024 * scale)),
          shift_(e.states_.size(), 0), left_(e.states_.size() * levels_, std::numeric_limits<double>::infinity()) {
      for (std::size_t s = 0; s < shift_.size(); ++s)
        while ((most_kept[s] >> shift_[s]) >= levels_) ++shift_[s];
      std::fill_n(left_.begin() + static_cast<std::ptrdiff_t>(std::size_t{final} * levels_), levels_, 0.0);
      for (std::size_t k = e.transitions_.size(); k-- > 0;) {
        const transition& t = e.transitions_[k];
        if (t.from == final || !finishes[t.to] || t.peak > budget || most_kept[t.to] < t.kept_added) continue;
        const std::uint64_t most = std::min(budget - t.peak, most_kept[t.to] - t.kept_added);
        double* here = &left_[std::size_t{t.from} * levels_];
        for (std::size_t j = 0; j < levels_ && (std::uint64_t{j} << shift_[t.from]) <= most; ++j) {
          here[j] = std::min(here[j], t.recompute + at(t.to, (std::uint64_t{j} << shift_[t.from]) + t.kept_added));
          ++steps_;
        }
      }
    }
    bool empty() const noexcept { return left_.empty(); }
    // Table entries filled, a measure of the work done.
    std::uint64_t steps() const noexcept { return steps_; }
    // A floor under the recompute left from s holding `kept` (≤ most_kept[s]) bytes.
    double at(std::uint32_t s, std::uint64_t kept) const {
      if (left_.empty()) return 0;
      return left_[std::size_t{s} * levels_ + std::min<std::uint64_t>(kept >> shift_[s], levels_ - 1)];
    }

   private:
    // Levels per state: as many as keep the table's work and size near these.
    static constexpr std::size_t level_steps = std::size_t{1} << 24, level_entries = std::size_t{1} << 21;
    std::size_t levels_ = 0;
    std::vector<std::uint8_t> shift_;  // per state: kept bytes >> shift_ is the level
    std::vector<double> left_;
    std::uint64_t steps_ = 0;
  };

  // The least recompute of the plans a beam of two-dimensional labels finds
  // within `budget` (infinity if none), its states in `chain`: whenever a
  // state's staircase of (kept, recompute) doubles past the beam's width,
  // only the labels with the least recompute by `left` (theirs and the floor
  // after them) stay, so every label left is a real partial plan. A label
  // links to the one it extends by its place in that state's front, which no
  // stage changes once a stage leaves the state. O(width) per stage.
  double beam_recompute(std::uint64_t budget, std::uint32_t final, const std::vector<std::uint64_t>& most_kept,
                        const recompute_floor& left, std::uint64_t& extended,
                        std::vector<std::uint32_t>& chain) const {
    struct point {
      std::uint64_t kept;
      double recompute;
      std::uint32_t from, at;  // the state and place in its front of the label extended
    };
    const std::size_t width = std::clamp<std::size_t>(beam_steps / std::max<std::size_t>(transitions_.size(), 1), 4, 64);
    std::vector<std::vector<point>> fronts(states_.size());
    fronts[0].push_back({0, 0.0, npos, npos});
    auto insert = [](std::vector<point>& front, point p) {
      auto at = std::lower_bound(front.begin(), front.end(), p.kept,
                                 [](const point& x, std::uint64_t k) { return x.kept < k; });
      if (at != front.end() && at->kept == p.kept && at->recompute <= p.recompute) return;
      if (at != front.begin() && std::prev(at)->recompute <= p.recompute) return;
      auto end = at;
      while (end != front.end() && end->recompute >= p.recompute) ++end;
      if (end == at) {
        front.insert(at, p);
      } else {
        *at = p;
        front.erase(at + 1, end);
      }
    };
    for (const transition& t : transitions_) {
      const std::vector<point>& from = fronts[t.from];
      if (from.empty() || most_kept[t.to] < t.kept_added) continue;
      std::vector<point>& to = fronts[t.to];
      for (std::size_t k = 0; k < from.size(); ++k) {
        const point& x = from[k];
        if (x.kept + t.peak <= budget && x.kept <= most_kept[t.to] - t.kept_added) {
          insert(to, {x.kept + t.kept_added, x.recompute + t.recompute, t.from, static_cast<std::uint32_t>(k)});
          ++extended;
        }
      }
      if (to.size() > 2 * width) {
        auto score = [&](const point& x) { return x.recompute + left.at(t.to, x.kept); };
        std::nth_element(to.begin(), to.begin() + static_cast<std::ptrdiff_t>(width), to.end(),
                         [&](const point& x, const point& y) { return score(x) < score(y); });
        to.resize(width);
        std::sort(to.begin(), to.end(), [](const point& x, const point& y) {
          return std::pair(x.kept, x.recompute) < std::pair(y.kept, y.recompute);
        });
      }
    }
    const std::vector<point>& done = fronts[final];
    const auto best = std::min_element(done.begin(), done.end(),
                                       [](const point& x, const point& y) { return x.recompute < y.recompute; });
    if (best == done.end()) return std::numeric_limits<double>::infinity();
    chain = {final};
    for (point p = *best; p.from != npos; p = fronts[p.from][p.at]) chain.push_back(p.from);
    std::reverse(chain.begin(), chain.end());
    return best->recompute;
  }
  static constexpr std::size_t beam_steps = std::size_t{1} << 21;
  // Floors built at most: at 2¹⁶ labels (by default), 2²⁰ and 2²⁴.
  static constexpr std::size_t most_floor_scale = 64;
  // Work units a floor entry and a beam label cost (time_budget::charge;
  // calibrated in docs/algorithms.md).
  static constexpr std::uint64_t floor_step_work = 3, beam_step_work = 25;

  bool two_dimensional_ = true;
  bool labels_capped_ = false;
  std::vector<std::uint32_t> beam_chain_;  // the last label phase's beam plan, as states

  // A label's figures live in its state's front, so the label loop and
  // push_label read a front as one run of memory; the store keeps only what
  // leads back to the start.
  struct front_entry {
    std::uint64_t kept;
    std::uint64_t peak;
    double recompute;
    std::uint32_t label;  // in labels_
  };
  struct label_link {
    std::uint32_t state, previous;
  };
  static front_entry entry_of(const dp_label& l, std::uint32_t index) { return {l.kept, l.peak, l.recompute, index}; }
  dp_label label_of(const front_entry& e) const {
    const label_link link = labels_[e.label];
    return {e.kept, e.peak, e.recompute, link.state, link.previous};
  }

  block_vector<label_link> labels_;
  std::vector<std::vector<front_entry>> fronts_;
  std::vector<std::vector<dp_label>> pending_;  // three-dimensional labels not yet settled, per state
  std::uint64_t pending_total_ = 0;
};

}  // namespace remat::detail
