#pragma once

/// \file
/// Feng & Huang's objective (analysis/segments.hpp) solved exactly on any DAG: the kept
/// set minimising kept bytes + the largest connected group of non-kept nodes,
/// over *all* kept sets, not only those a division of the graph allows.
///
/// Method: a sweep over the nodes in id (topological) order deciding each
/// one, keep or drop. The state after node i is what the rest of the sweep
/// can still see: the groups of dropped nodes that have a neighbour not yet
/// decided, each known by that set of undecided neighbours (its *frontier*).
/// Groups with the same frontier are merged into one *bundle*: whatever
/// comes next touches all of them or none, so only their sum (if a later
/// dropped node joins them) and their largest member (if none ever does)
/// matter, and the largest is settled at once. Graph inputs and outputs are
/// free checkpoints. A label per state holds the bytes kept, the largest
/// closed segment and the open groups' bytes; labels are pruned by
/// dominance (a label is no better than another when it keeps no fewer
/// bytes, its kept + closed bytes are no fewer, and no open group is
/// smaller) and by a threshold (kept + the largest group so far is a lower
/// bound on any completion; solve_segments_exact chooses the thresholds).
///
/// Complexity: O(n · S · (w + deg)) plus the dominance scans, where S is the
/// number of labels alive at a step and w the frontier size. S stays small
/// when few nodes are open at once and the threshold is near the optimum
/// (chains, ResNets, Inception; DenseNet's dense blocks collapse into one
/// bundle); it grows exponentially with the open groups' combinations (NAS
/// cells leave 6–7 nodes open), where `max_labels` and the time limit stop
/// the search with the best kept set found and a lower bound.

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

#include <remat/analysis/segments.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/ogc.hpp>
#include <remat/time_budget.hpp>

namespace remat {

struct segment_dp_options {
  time_budget time;
  /// Labels created over the whole sweep (each costs a few words); past it the
  /// incumbent is returned with a lower bound.
  std::uint64_t max_labels = 20'000'000;
  /// Each sweep that proves "nothing below T" is followed by one at
  /// T · threshold_growth (see solve_segments_exact).
  double threshold_growth = 1.25;
  /// Labels kept per step (over all states) by the heuristic sweep that
  /// improves the incumbent before the proof (0: no such sweep).
  std::size_t beam = 256;
};

namespace detail {

// One group (or bundle) of dropped nodes in a state: its frontier and whether
// it is a single connected group (`genuine`) or a bundle of several whose
// largest member has already been counted.
struct segment_group {
  std::vector<node_id> frontier;  // undecided neighbours, ascending
  bool genuine = true;
};

// A state's labels, one row each, sorted by kept bytes: row k is
// [kept, kept + closed, open bytes of each group], so dominance checks
// scan only the rows that could dominate (kept no larger) or be dominated.
struct segment_state {
  std::vector<segment_group> groups;
  std::vector<std::uint64_t> rows;
  std::vector<std::uint32_t> trail;
  std::size_t stride() const noexcept { return 2 + groups.size(); }
  std::size_t size() const noexcept { return trail.size(); }
  std::uint64_t kept(std::size_t k) const noexcept { return rows[k * stride()]; }
  std::uint64_t settled(std::size_t k) const noexcept { return rows[k * stride() + 1]; }
  std::uint64_t closed(std::size_t k) const noexcept { return settled(k) - kept(k); }
  const std::uint64_t* open(std::size_t k) const noexcept { return rows.data() + k * stride() + 2; }

  /// Drops the rows from `first` on for which drop(k) holds, keeping the
  /// order of the others; returns how many dropped rows lay before `before`.
  template <class Drop>
  std::size_t erase_if(std::size_t first, std::size_t before, Drop&& drop) {
    const std::size_t width = stride();
    std::size_t out = first, dropped_before = 0;
    for (std::size_t k = first; k < size(); ++k) {
      if (drop(k)) {
        dropped_before += k < before ? 1 : 0;
        continue;
      }
      if (out != k) {
        std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(k * width), width,
                    rows.begin() + static_cast<std::ptrdiff_t>(out * width));
        trail[out] = trail[k];
      }
      ++out;
    }
    rows.resize(out * width);
    trail.resize(out);
    return dropped_before;
  }
};

// How one decision maps a state's groups to its successor's: every new group
// sums some old groups (plus the decided node when it is dropped); `fold`
// lists intermediate groups whose bytes are settled into the closed segment.
struct segment_transition {
  struct part {
    std::vector<std::uint32_t> from;  // old group indices
    bool with_node = false;           // the dropped node itself
    bool genuine = true;
  };
  std::vector<part> parts;                       // intermediate groups
  std::vector<std::uint32_t> fold;               // parts settled into `closed`
  std::vector<std::vector<std::uint32_t>> next;  // new group -> parts summed
  std::vector<segment_group> groups;             // the successor's groups
  std::vector<std::uint32_t> key;                // their serialization
};

class segment_sweep {
 public:
  // `beam` > 0 keeps only that many labels after each step, over all states
  // (least lower bound first): a heuristic sweep, never a proof.
  segment_sweep(const graph& g, const segment_dp_options& options, std::uint64_t threshold, std::size_t beam = 0)
      : g_(g), options_(options), threshold_(threshold), beam_(beam) {}

  // Runs the sweep. Returns the best kept set scoring below the threshold,
  // or nothing when none does (or the search stopped).
  std::optional<node_set> run() {
    const std::size_t n = g_.size();
    std::vector<segment_state> states(1);
    states[0].rows = {0, 0};
    states[0].trail.push_back(push_trail(none_trail, false));
    for (node_id v = 0; v < n; ++v) {
      if (g_.is_input(v)) continue;
      order_.push_back(v);
      std::vector<segment_state> next;
      std::unordered_map<std::vector<std::uint32_t>, std::size_t, key_hash> index;
      for (segment_state& s : states) {
        // insert() checks the time every 1024 labels, which many states of
        // few labels each take seconds to reach.
        std::size_t width = 0;  // a transition copies and hashes the groups' frontiers
        for (const segment_group& group : s.groups) width += group.frontier.size() + 1;
        if (options_.time.charge(width * 100 + s.rows.size() * 20 + 1000)) {
          stats.time_limit_reached = true;
          stopped_bound_ = bound_over(states);
          return std::nullopt;
        }
        for (bool keep : {true, false}) {
          if (!keep && is_segment_endpoint(g_, v)) continue;
          const segment_transition t = transition(s, v, keep);
          auto [it, inserted] = index.try_emplace(t.key, next.size());
          if (inserted) {
            next.emplace_back();
            next.back().groups = t.groups;
          }
          if (!apply(s, t, v, keep, next[it->second])) {
            stopped_bound_ = bound_over(states);
            return std::nullopt;
          }
        }
      }
      if (beam_ > 0) narrow(next);
      states = std::move(next);
      std::size_t alive = 0;
      for (const segment_state& s : states) alive += s.size();
      stats.states += states.size();
      if (alive == 0) break;
    }
    complete = true;
    if (states.empty() || states[0].size() == 0) return std::nullopt;
    const segment_state& last = states[0];
    std::size_t best = 0;
    for (std::size_t k = 1; k < last.size(); ++k)
      if (last.settled(k) < last.settled(best)) best = k;
    if (last.settled(best) >= threshold_) return std::nullopt;
    return decode(last.trail[best]);
  }

  // When the sweep stopped early: no kept set scores below this (every
  // completion extends a label alive at that step, or reaches the threshold).
  std::uint64_t stopped_bound() const noexcept { return stopped_bound_; }

  segment_stats stats;
  bool complete = false;

 private:
  static constexpr std::uint32_t none_trail = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::size_t max_trail = std::numeric_limits<std::uint32_t>::max() - 1;

  struct key_hash {
    std::size_t operator()(const std::vector<std::uint32_t>& key) const noexcept {
      std::size_t h = 1469598103934665603ULL;
      for (std::uint32_t x : key) h = (h ^ x) * 1099511628211ULL;
      return h;
    }
  };

  std::uint32_t push_trail(std::uint32_t parent, bool keep) {
    trail_.push_back({parent, keep});
    return static_cast<std::uint32_t>(trail_.size() - 1);
  }

  node_set decode(std::uint32_t at) const {
    node_set kept(g_.size());
    std::size_t step = order_.size();
    while (at != none_trail && step > 0) {
      --step;
      if (trail_[at].keep && !is_segment_endpoint(g_, order_[step])) kept.insert(order_[step]);
      at = trail_[at].parent;
    }
    return kept;
  }

  // Keeps the beam_ labels of least lower bound over all states.
  void narrow(std::vector<segment_state>& states) const {
    std::vector<std::uint64_t> bounds;
    for (const segment_state& s : states)
      for (std::size_t k = 0; k < s.size(); ++k) bounds.push_back(label_bound(s, k));
    if (bounds.size() <= beam_) return;
    std::nth_element(bounds.begin(), bounds.begin() + static_cast<std::ptrdiff_t>(beam_), bounds.end());
    const std::uint64_t cut = bounds[beam_];
    for (segment_state& s : states) s.erase_if(0, 0, [&](std::size_t k) { return label_bound(s, k) >= cut; });
  }

  std::uint64_t bound_over(const std::vector<segment_state>& states) const {
    std::uint64_t bound = threshold_;
    for (const segment_state& s : states)
      for (std::size_t k = 0; k < s.size(); ++k) bound = std::min(bound, label_bound(s, k));
    return bound;
  }

  std::uint64_t label_bound(const segment_state& s, std::size_t k) const {
    std::uint64_t largest = s.closed(k);
    const std::uint64_t* open = s.open(k);
    for (std::size_t i = 0; i < s.groups.size(); ++i)
      if (s.groups[i].genuine) largest = std::max(largest, open[i]);
    return s.kept(k) + largest;
  }

  segment_transition transition(const segment_state& s, node_id v, bool keep) const {
    segment_transition t;
    std::vector<segment_group> inter;
    segment_transition::part joined;
    segment_group grown;
    for (std::uint32_t i = 0; i < s.groups.size(); ++i) {
      const segment_group& group = s.groups[i];
      const bool touches = std::binary_search(group.frontier.begin(), group.frontier.end(), v);
      if (touches && !keep) {
        joined.from.push_back(i);
        grown.frontier.insert(grown.frontier.end(), group.frontier.begin(), group.frontier.end());
        continue;
      }
      segment_group after = group;
      if (touches) after.frontier.erase(std::lower_bound(after.frontier.begin(), after.frontier.end(), v));
      if (after.frontier.empty()) {
        if (group.genuine) {
          t.fold.push_back(static_cast<std::uint32_t>(t.parts.size()));
          t.parts.push_back({{i}, false, true});
        }
        continue;
      }
      t.parts.push_back({{i}, false, group.genuine});
      inter.push_back(std::move(after));
    }
    if (!keep) {
      for (node_id c : g_.successors(v)) grown.frontier.push_back(c);
      std::sort(grown.frontier.begin(), grown.frontier.end());
      grown.frontier.erase(std::unique(grown.frontier.begin(), grown.frontier.end()), grown.frontier.end());
      grown.frontier.erase(std::remove(grown.frontier.begin(), grown.frontier.end(), v), grown.frontier.end());
      joined.with_node = true;
      t.parts.push_back(std::move(joined));
      inter.push_back(std::move(grown));
    }
    // Parts that close have no successor group; the others map 1:1 to inter.
    std::vector<std::uint32_t> open_parts;
    for (std::uint32_t p = 0; p < t.parts.size(); ++p)
      if (std::find(t.fold.begin(), t.fold.end(), p) == t.fold.end()) open_parts.push_back(p);
    std::vector<std::uint32_t> order(inter.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return inter[a].frontier < inter[b].frontier;
    });
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i;
      while (j < order.size() && inter[order[j]].frontier == inter[order[i]].frontier) ++j;
      segment_group merged{inter[order[i]].frontier, j - i == 1 && inter[order[i]].genuine};
      std::vector<std::uint32_t> members;
      for (std::size_t k = i; k < j; ++k) {
        const std::uint32_t part = open_parts[order[k]];
        members.push_back(part);
        if (j - i > 1 && t.parts[part].genuine) t.fold.push_back(part);
      }
      t.groups.push_back(std::move(merged));
      t.next.push_back(std::move(members));
      i = j;
    }
    // Equal frontiers were merged, so sorting by frontier alone is canonical.
    for (const segment_group& group : t.groups) {
      t.key.push_back(static_cast<std::uint32_t>(group.frontier.size()) * 2 + (group.genuine ? 1 : 0));
      t.key.insert(t.key.end(), group.frontier.begin(), group.frontier.end());
    }
    return t;
  }

  // Maps every label of `s` through `t` into `target`. False when a cap or
  // the time limit stops the search.
  bool apply(const segment_state& s, const segment_transition& t, node_id v, bool keep, segment_state& target) {
    const std::size_t new_groups = t.groups.size();
    std::vector<std::uint64_t> part_bytes(t.parts.size()), open(new_groups);
    const std::uint64_t kept_add = keep && !is_segment_endpoint(g_, v) ? g_.bytes(v) : 0;
    for (std::size_t k = 0; k < s.size(); ++k) {
      for (std::size_t p = 0; p < t.parts.size(); ++p) {
        std::uint64_t bytes = t.parts[p].with_node ? g_.bytes(v) : 0;
        for (std::uint32_t i : t.parts[p].from) bytes += s.open(k)[i];
        part_bytes[p] = bytes;
      }
      const std::uint64_t kept = s.kept(k) + kept_add;
      std::uint64_t closed = s.closed(k);
      for (std::uint32_t p : t.fold) closed = std::max(closed, part_bytes[p]);
      std::uint64_t largest = closed;
      for (std::size_t i = 0; i < new_groups; ++i) {
        std::uint64_t bytes = 0;
        for (std::uint32_t p : t.next[i]) bytes += part_bytes[p];
        open[i] = bytes;
        if (t.groups[i].genuine) largest = std::max(largest, bytes);
      }
      if (kept + largest >= threshold_) {
        ++stats.pruned;
        continue;
      }
      if (!insert(target, kept, closed, open, s.trail[k], keep)) return false;
    }
    return true;
  }

  bool insert(segment_state& target, std::uint64_t kept, std::uint64_t closed, const std::vector<std::uint64_t>& open,
              std::uint32_t parent, bool keep) {
    // An insert scans the target's rows for dominance: its work is their size.
    work_pending_ += target.rows.size() + 32;
    if (work_pending_ >= (std::uint64_t{1} << 16)) {
      const bool spent = options_.time.charge(work_pending_ / 2);
      work_pending_ = 0;
      if (spent) {
        stats.time_limit_reached = true;
        return false;
      }
    }
    const std::size_t stride = target.stride();
    const std::uint64_t settled = kept + closed;
    auto no_larger = [](const std::uint64_t* a, const std::uint64_t* b, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i)
        if (a[i] > b[i]) return false;
      return true;
    };
    // Rows [0, after) keep no more bytes than the new label: they may dominate it.
    std::size_t lo = 0, hi = target.size();
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (target.kept(mid) <= kept) lo = mid + 1;
      else hi = mid;
    }
    std::size_t after = lo;
    for (std::size_t k = 0; k < after; ++k)
      if (target.settled(k) <= settled && no_larger(target.open(k), open.data(), open.size())) return true;
    // Rows from the first with equal kept bytes on may be dominated by it.
    std::size_t first = after;
    while (first > 0 && target.kept(first - 1) == kept) --first;
    after -= target.erase_if(first, after, [&](std::size_t k) {
      return settled <= target.settled(k) && no_larger(open.data(), target.open(k), open.size());
    });
    std::vector<std::uint64_t> row{kept, settled};
    row.insert(row.end(), open.begin(), open.end());
    target.rows.insert(target.rows.begin() + static_cast<std::ptrdiff_t>(after * stride), row.begin(), row.end());
    target.trail.insert(target.trail.begin() + static_cast<std::ptrdiff_t>(after), push_trail(parent, keep));
    if (++stats.labels > options_.max_labels || trail_.size() >= max_trail) {
      stats.cap_reached = true;
      return false;
    }
    return true;
  }

  struct trail_entry {
    std::uint32_t parent;
    bool keep;
  };

  const graph& g_;
  segment_dp_options options_;
  std::uint64_t threshold_;
  std::size_t beam_;
  std::vector<node_id> order_;
  std::vector<trail_entry> trail_;
  std::uint64_t stopped_bound_ = 0;
  std::uint64_t work_pending_ = 0;  // units not yet charged
};

// First-improvement local search: toggles one checkpoint at a time while
// that lowers the objective, until the time is spent. O(passes · n · (n + m)):
// without a limit a 10⁵-node graph kept it busy for minutes.
inline segment_cost polish_segments(const graph& g, node_set& kept, segment_cost cost, const time_budget& time) {
  for (bool improved = true; improved;) {
    improved = false;
    for (node_id v = 0; v < g.size(); ++v) {
      if (time.charge(pass_work(g, 20))) return cost;
      if (is_segment_endpoint(g, v)) continue;
      kept.set(v, !kept.contains(v));
      const segment_cost trial = evaluate_segments(g, kept);
      if (trial.total() < cost.total()) {
        cost = trial;
        improved = true;
      } else {
        kept.set(v, !kept.contains(v));
      }
    }
  }
  return cost;
}

}  // namespace detail

/// The kept set minimising Feng & Huang's objective over all kept sets.
///
/// 1. An incumbent: `incumbent` when given (e.g. the `ogc` division
///    search's), else every node kept; improved by a sweep that keeps only the
///    `beam` most promising labels per step, then by a local search that
///    toggles one checkpoint at a time.
/// 2. The proof: a sweep prunes every label whose lower bound reaches a
///    threshold T, so it either finds the optimum (when it is below T) or
///    proves that none is. T starts at half the incumbent (with a quarter of
///    the labels and time; if that is not enough, just above the largest single node,
///    which no kept set scores below) and grows by
///    `threshold_growth` after each proof, up to the incumbent: sweeps below
///    the optimum are cheap, and the one that succeeds keeps only labels
///    within a few tens of percent of the optimum (far fewer labels than a
///    sweep without a threshold: docs/results-solvers.md).
///
/// The result is never worse than the incumbent. When `max_labels` or the
/// time limit stops the proof, the best kept set found is returned with
/// `optimal` false and as `lower_bound` the larger of the largest threshold
/// proven and segment_packing_bound.
inline segment_solution solve_segments_exact(const graph& g, const segment_dp_options& options = {},
                                             const node_set* incumbent = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  const auto grace_time = std::max<time_budget::clock::duration>(options.time.limited() ? options.time.left() / 50 : time_budget::clock::duration::zero(), std::chrono::milliseconds(100));
  const std::uint64_t grace_work = std::max<std::uint64_t>(options.time.work_left() / 50, 100'000'000);
  segment_solution out;
  out.kept = node_set(g.size());
  for (node_id v = 0; v < g.size(); ++v)
    if (!is_segment_endpoint(g, v) && (incumbent == nullptr || incumbent->contains(v))) out.kept.insert(v);
  out.cost = evaluate_segments(g, out.kept);

  segment_dp_options remaining = options;
  auto account = [&](const detail::segment_sweep& sweep) {
    out.stats.labels += sweep.stats.labels;
    out.stats.pruned += sweep.stats.pruned;
    out.stats.states += sweep.stats.states;
    ++out.stats.sweeps;
    remaining.max_labels = options.max_labels - std::min(options.max_labels, out.stats.labels);
  };
  if (options.beam > 0) {
    detail::segment_sweep sweep(g, remaining, out.cost.total(), options.beam);
    if (std::optional<node_set> found = sweep.run()) {
      out.kept = std::move(*found);
      out.cost = evaluate_segments(g, out.kept);
    }
    account(sweep);
  }
  out.cost = detail::polish_segments(g, out.kept, out.cost, options.time);

  std::uint64_t lower = largest_segment_node(g);
  const std::uint64_t upper = out.cost.total();
  // The first threshold is a guess, half the incumbent, given a quarter of
  // the labels and of the time: when the optimum lies below it that sweep finds it at once.
  // Otherwise (or when the guess was too costly) the ladder climbs from the
  // largest node, whose sweeps are cheap and each prove a lower bound.
  std::uint64_t threshold = std::max(lower + 1, upper / 2);
  bool guessing = threshold < upper;
  if (!guessing) threshold = std::min(upper, lower + 1);
  while (true) {
    segment_dp_options limits = remaining;
    if (guessing) {
      limits.max_labels = remaining.max_labels / 4;
      limits.time = options.time.share(1, 4);
    }
    detail::segment_sweep sweep(g, limits, threshold);
    std::optional<node_set> found = sweep.run();
    account(sweep);
    if (found) {
      out.kept = std::move(*found);
      out.cost = evaluate_segments(g, out.kept);
    }
    if (guessing && !sweep.complete && !found) {
      guessing = false;
      threshold = std::min(upper, lower + 1);
      continue;
    }
    if (!sweep.complete) {
      out.stats.cap_reached = sweep.stats.cap_reached;
      out.stats.time_limit_reached = sweep.stats.time_limit_reached;
      // The packing bound looks at the whole graph at once, where the sweeps
      // stopped low; it may take a fiftieth of the time (and work) past the
      // limit, or 100 ms (as many nominal nanoseconds of work).
      const time_budget grace = options.time.extended(grace_time, grace_work);
      out.lower_bound = std::max({lower, sweep.stopped_bound(), segment_packing_bound(g, grace)});
      if (out.lower_bound >= out.cost.total()) {
        out.optimal = true;
        out.lower_bound = out.cost.total();
      }
      break;
    }
    if (found || threshold >= upper) {
      out.optimal = true;
      out.lower_bound = out.cost.total();
      break;
    }
    lower = threshold;  // the sweep proved that nothing scores below it
    guessing = false;
    const auto grown = static_cast<std::uint64_t>(static_cast<double>(threshold) * options.threshold_growth);
    threshold = std::min(upper, std::max(grown, threshold + 1));
  }
  out.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

struct ogc_exact_options {
  std::uint64_t budget = no_budget;  ///< above it the plan is `infeasible`
  time_budget time;
  /// Labels its sweeps may create before it returns its best kept set with a
  /// lower bound (segment_dp_options::max_labels).
  std::uint64_t max_labels = 4'000'000;
  std::optional<std::uint64_t> per_op_floor = std::nullopt;  ///< the graph's, when the caller knows it
};

/// The method `ogc-exact`: Feng & Huang's objective minimised over all kept
/// sets (solve_segments_exact), from the division search's kept set (a
/// quarter of the time); `optimal` when proven for that objective, which is
/// not the simulated peak.
inline solution solve_ogc_exact(const graph& g, const ogc_exact_options& options = {}) {
  const std::uint64_t floor = per_op_floor_of(g, options.per_op_floor);
  const ogc_solution division = ogc_kept_set(g, options.time.share(1, 4));
  segment_dp_options dp;
  dp.time = options.time;
  dp.max_labels = options.max_labels;
  const segment_solution found = solve_segments_exact(g, dp, &division.kept);
  solution s = detail::segment_plan_solution(
      g, found, "ogc-exact", options.budget, floor,
      {{"sweeps", found.stats.sweeps}, {"sweep states", found.stats.states}, {"labels", found.stats.labels}});
  s.stats.cap_reached = found.stats.cap_reached;
  s.stats.time_limit_reached = found.stats.time_limit_reached;
  if (s.status == solve_status::infeasible) return s;
  const std::string figure = detail::segment_figure(found.cost);
  if (found.optimal) {
    s.status = solve_status::optimal;
    s.message = "optimal for Feng & Huang's objective: " + figure;
  } else {
    s.message = "Feng & Huang's objective " + figure + "; no kept set scores below " +
                std::to_string(found.lower_bound) + " bytes (" +
                (found.stats.time_limit_reached ? std::string(options.time.spent_on()) : std::string("the label cap")) +
                " reached)";
  }
  return s;
}

}  // namespace remat
