#pragma once

/// \file
/// remat::time_budget: the one form a time limit takes inside remat. A budget
/// is a deadline on the steady clock, or none at all; a caller hands each
/// phase of its work a share of what is left, and every share ends no later
/// than the budget it came from, so a call with a limit returns within it
/// (plus the time between two checks of the clock). A budget may also carry a
/// memory ceiling (memory_ceiling.hpp): it then expires when either runs out,
/// and every share carries the same ceiling.
///
/// **Work.** A budget may also run on a second clock that only the search
/// moves: a work_meter, which the searches' inner loops advance by the work
/// they did (`charge`). A work deadline splits into shares exactly as the
/// time deadline does, and every decision a method takes on "what is left"
/// reads both clocks, so when the work limit ends a search before the time
/// limit, the answer does not depend on the machine or its load. A work unit
/// is a nominal nanosecond: the charges are estimates of the searches' cost
/// on the development machine (docs/algorithms.md gives measured rates).
///
/// Only this file knows what "no limit" is: `time_budget::unlimited()`. A
/// limit of zero or less is a budget already spent, never "no limit".

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>

#include <remat/memory_ceiling.hpp>

namespace remat {

/// Where a search stands, for live progress (solve_options::progress).
struct search_progress {
  double seconds = 0;             ///< since the search began
  std::uint64_t work = 0;         ///< work units charged so far
  std::uint64_t best_peak = 0;    ///< the least peak of a plan found so far (0: none yet)
  std::uint64_t lower_bound = 0;  ///< no plan of the method's family peaks lower (0: none known)
};

/// The work a solve has done, in work units, advanced by time_budget::charge.
/// One meter per solve; every share of its budget advances the same meter,
/// and notes which clock ended a share, for the solve's statistics. It also
/// carries the best plan and bound found so far to a progress callback, at
/// most once an `every`.
class work_meter {
 public:
  using progress_callback = std::function<void(const search_progress&)>;

  work_meter() = default;
  explicit work_meter(progress_callback on_progress, std::chrono::milliseconds every = std::chrono::milliseconds(250))
      : on_progress_(std::move(on_progress)), every_(every) {}

  std::uint64_t done() const noexcept { return done_; }
  void add(std::uint64_t units) noexcept {
    done_ = units > ~done_ ? ~std::uint64_t{0} : done_ + units;
    if (on_progress_ && done_ >= next_look_) {
      next_look_ = done_ + look_every;
      if (std::chrono::steady_clock::now() - last_report_ >= every_) report();
    }
  }
  /// A search found a plan peaking at `peak` bytes.
  void found_plan(std::uint64_t peak) noexcept {
    if (peak > 0 && (progress_.best_peak == 0 || peak < progress_.best_peak)) progress_.best_peak = peak;
  }
  /// A search proved no plan of its family peaks below `bound`.
  void found_bound(std::uint64_t bound) noexcept { progress_.lower_bound = std::max(progress_.lower_bound, bound); }
  /// Calls the progress callback now (when there is one).
  void report() noexcept {
    if (!on_progress_) return;
    const auto now = std::chrono::steady_clock::now();
    last_report_ = now;
    progress_.seconds = std::chrono::duration<double>(now - start_).count();
    progress_.work = done_;
    try {
      on_progress_(progress_);
    } catch (...) {
      on_progress_ = nullptr;  // a progress report that fails is dropped, never the search
    }
  }
  /// Whether a work deadline (of the budget or a share) ended a search.
  bool ended_by_work() const noexcept { return ended_by_work_; }
  /// Whether a time deadline (of the budget or a share) ended a search.
  bool ended_by_time() const noexcept { return ended_by_time_; }

 private:
  friend class time_budget;
  // The clock is looked at once every this many units (a few milliseconds
  // of search), not on every charge.
  static constexpr std::uint64_t look_every = std::uint64_t{1} << 22;

  std::uint64_t done_ = 0;
  bool ended_by_work_ = false;
  bool ended_by_time_ = false;
  progress_callback on_progress_;
  std::chrono::milliseconds every_{250};
  std::uint64_t next_look_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_report_ = start_;
  search_progress progress_;
};

/// Where a budget stood at one moment, on both its clocks (time_budget::mark).
struct budget_mark {
  std::chrono::steady_clock::time_point time;
  std::uint64_t work = 0;
};

class time_budget {
 public:
  using clock = std::chrono::steady_clock;

  /// No deadline (the default).
  constexpr time_budget() noexcept = default;
  static constexpr time_budget unlimited() noexcept { return {}; }

  /// Ends `limit` from now; a limit of zero or less (or NaN) is already spent.
  template <class Rep, class Period>
  static time_budget within(std::chrono::duration<Rep, Period> limit) noexcept {
    const auto now = clock::now();
    if (!(limit > limit.zero())) return until(now);
    // A limit past the clock's range is no limit.
    if (std::chrono::duration<double>(limit) >= std::chrono::duration<double>(clock::time_point::max() - now))
      return unlimited();
    return until(now + std::chrono::duration_cast<clock::duration>(limit));
  }

  static constexpr time_budget until(clock::time_point deadline) noexcept {
    time_budget b;
    b.deadline_ = deadline;
    return b;
  }

  constexpr bool limited() const noexcept { return deadline_ != clock::time_point::max(); }
  /// The deadline; clock::time_point::max() when unlimited.
  constexpr clock::time_point deadline() const noexcept { return deadline_; }
  bool expired() const noexcept {
    if (past_work_limit()) return work_->ended_by_work_ = true;
    if (!limited() && memory_ == nullptr) return false;
    const clock::time_point now = clock::now();
    if (limited() && now >= deadline_) {
      if (work_ != nullptr) work_->ended_by_time_ = true;
      return true;
    }
    return memory_ != nullptr && memory_->exceeded(now);
  }
  /// Adds `units` of work done to the work meter (when the budget has one),
  /// then says whether the budget is spent. Inner loops call it with an
  /// estimate of the work since their last call.
  bool charge(std::uint64_t units) const noexcept {
    if (work_ != nullptr) work_->add(units);
    return expired();
  }
  /// Whether the deadline (not the memory ceiling) has passed.
  bool past_deadline() const noexcept { return limited() && clock::now() >= deadline_; }

  /// This budget, also ending once `meter` has counted `units` more work
  /// units (time_budget::no_work_limit(): never, the meter only counting);
  /// `meter` must outlive the budget and every share of it.
  time_budget with_work(work_meter& meter, std::uint64_t units) const noexcept {
    time_budget b = *this;
    b.work_ = &meter;
    b.work_deadline_ = units > ~meter.done() ? no_work_limit() : meter.done() + units;
    return b;
  }
  bool work_limited() const noexcept { return work_ != nullptr && work_deadline_ != no_work_limit(); }
  /// Whether the work limit (not the time limit) is spent.
  bool past_work_limit() const noexcept { return work_limited() && work_->done() >= work_deadline_; }
  /// The work done so far (0 without a meter).
  std::uint64_t work_done() const noexcept { return work_ != nullptr ? work_->done() : 0; }
  /// For progress reports: a plan peaking at `peak` bytes was found.
  void found_plan(std::uint64_t peak) const noexcept {
    if (work_ != nullptr) work_->found_plan(peak);
  }
  /// For progress reports: no plan of the method's family peaks below `bound`.
  void found_bound(std::uint64_t bound) const noexcept {
    if (work_ != nullptr) work_->found_bound(bound);
  }
  /// Both clocks now, for has_left.
  budget_mark mark() const noexcept { return {clock::now(), work_done()}; }
  /// Whether what is left is at least what passed since `since`, on each
  /// clock the budget limits.
  bool has_left(const budget_mark& since) const noexcept {
    const clock::time_point now = clock::now();
    if (limited() && deadline_ - std::min(deadline_, now) < now - since.time) return false;
    return !work_limited() || work_left() >= work_->done() - since.work;
  }

  /// This budget, ending also when `ceiling` is passed; `ceiling` must
  /// outlive the budget and every share of it.
  time_budget with_memory(memory_ceiling& ceiling) const noexcept { return with(&ceiling); }
  memory_ceiling* memory() const noexcept { return memory_; }
  /// What ended this budget, for messages: "the memory ceiling" once it was
  /// passed, "the work limit" once that was, else "the time limit".
  std::string_view spent_on() const noexcept {
    if (memory_ != nullptr && memory_->reached()) return "the memory ceiling";
    return past_work_limit() ? "the work limit" : "the time limit";
  }

  /// What is left of the time (zero once spent; clock::duration::max() when unlimited).
  clock::duration left() const noexcept {
    if (memory_ != nullptr && memory_->reached()) return clock::duration::zero();
    if (!limited()) return clock::duration::max();
    return std::max(clock::duration::zero(), deadline_ - clock::now());
  }

  /// The first `numerator / denominator` of what is left, on each clock;
  /// unlimited stays unlimited.
  time_budget share(std::int64_t numerator, std::int64_t denominator) const noexcept {
    time_budget b = *this;
    if (limited()) {
      const clock::time_point now = clock::now();
      const clock::duration rest = std::max(clock::duration::zero(), deadline_ - now);
      b.deadline_ = std::min(deadline_, now + rest * numerator / denominator);
    }
    if (work_limited()) {
      const std::uint64_t done = work_->done(), rest = work_deadline_ - std::min(work_deadline_, done);
      b.work_deadline_ = done + scaled(rest, numerator, denominator);
    }
    return b;
  }

  /// This budget less the smaller of `most` and `numerator / denominator` of
  /// what is left, kept back for a later phase: the deadlines move earlier,
  /// unlimited stays unlimited. With a work limit, the reserve is reckoned
  /// in work (a duration of work is as many nominal nanoseconds) and the
  /// time deadline keeps back the same fraction of the time left, so that a
  /// slower or busier machine reaches the work limit first.
  time_budget less(clock::duration most, std::int64_t numerator, std::int64_t denominator) const noexcept {
    time_budget b = *this;
    const clock::time_point now = clock::now();
    const clock::duration rest = limited() ? std::max(clock::duration::zero(), deadline_ - now) : clock::duration::zero();
    if (work_limited()) {
      const std::uint64_t work_rest = work_left();
      const std::uint64_t kept = std::min(units_in(most), scaled(work_rest, numerator, denominator));
      b.work_deadline_ = work_deadline_ - kept;
      if (limited() && work_rest > 0) b.deadline_ = deadline_ - scaled(rest, kept, work_rest);
      else if (limited()) b.deadline_ = now;
    } else if (limited()) {
      b.deadline_ = deadline_ - std::min(most, scaled(rest, numerator, denominator));
    }
    return b;
  }

  /// This budget less `reserve` of time only, for work the meter does not
  /// count (building and simulating the plan a search returns).
  time_budget less_time(clock::duration reserve) const noexcept {
    if (!limited()) return *this;
    time_budget b = *this;
    const clock::time_point now = clock::now();
    b.deadline_ = deadline_ - now > reserve ? deadline_ - reserve : now;
    return b;
  }

  /// At most `most` from now, within this budget. With a work limit, `most`
  /// is work (nominal nanoseconds) and the time deadline allows the same
  /// fraction of the time left, as in less().
  time_budget next(clock::duration most) const noexcept {
    time_budget b = *this;
    const clock::time_point now = clock::now();
    if (work_limited()) {
      const std::uint64_t work_rest = work_left(), units = std::min(units_in(most), work_rest);
      b.work_deadline_ = work_->done() + units;
      if (limited() && work_rest > 0) b.deadline_ = now + scaled(std::max(clock::duration::zero(), deadline_ - now), units, work_rest);
      else if (limited()) b.deadline_ = now;
    } else if (most <= clock::duration::zero()) {
      b.deadline_ = now;
    } else if (!limited() || deadline_ - now > most) {
      b.deadline_ = now + most;
    }
    return b;
  }

  /// This budget with its deadlines moved later by `time` and `work` units,
  /// a grace period past the limit for a last step.
  time_budget extended(clock::duration time, std::uint64_t work) const noexcept {
    time_budget b = *this;
    if (limited()) b.deadline_ = deadline_ + time;
    if (work_limited()) b.work_deadline_ = work_deadline_ + std::min(work, ~work_deadline_ - 1);
    return b;
  }

  /// The work units left (no_work_limit() when the work is not limited).
  std::uint64_t work_left() const noexcept {
    return work_limited() ? work_deadline_ - std::min(work_deadline_, work_->done()) : no_work_limit();
  }
  static constexpr std::uint64_t no_work_limit() noexcept { return ~std::uint64_t{0}; }

 private:
  static std::uint64_t units_in(clock::duration d) noexcept {
    if (d <= clock::duration::zero()) return 0;
    if (d == clock::duration::max()) return no_work_limit();
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  }
  // x · numerator / denominator without overflow (numerator ≤ denominator).
  static std::uint64_t scaled(std::uint64_t x, std::uint64_t numerator, std::uint64_t denominator) noexcept {
    return static_cast<std::uint64_t>(static_cast<long double>(x) * static_cast<long double>(numerator) /
                                      static_cast<long double>(denominator));
  }
  static clock::duration scaled(clock::duration x, std::uint64_t numerator, std::uint64_t denominator) noexcept {
    return clock::duration(static_cast<clock::rep>(scaled(static_cast<std::uint64_t>(x.count()), numerator, denominator)));
  }
  time_budget with(memory_ceiling* ceiling) const noexcept {
    time_budget b = *this;
    b.memory_ = ceiling;
    return b;
  }

  clock::time_point deadline_ = clock::time_point::max();
  memory_ceiling* memory_ = nullptr;
  work_meter* work_ = nullptr;
  std::uint64_t work_deadline_ = no_work_limit();
};

}  // namespace remat
