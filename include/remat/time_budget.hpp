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
/// Only this file knows what "no limit" is: `time_budget::unlimited()`. A
/// limit of zero or less is a budget already spent, never "no limit".

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string_view>

#include <remat/memory_ceiling.hpp>

namespace remat {

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
    if (!limited() && memory_ == nullptr) return false;
    const clock::time_point now = clock::now();
    return (limited() && now >= deadline_) || (memory_ != nullptr && memory_->exceeded(now));
  }
  /// Whether the deadline (not the memory ceiling) has passed.
  bool past_deadline() const noexcept { return limited() && clock::now() >= deadline_; }

  /// This budget, ending also when `ceiling` is passed; `ceiling` must
  /// outlive the budget and every share of it.
  time_budget with_memory(memory_ceiling& ceiling) const noexcept { return with(&ceiling); }
  memory_ceiling* memory() const noexcept { return memory_; }
  /// What ended this budget, for messages: "the memory ceiling" once it was
  /// passed, else "the time limit".
  std::string_view spent_on() const noexcept {
    return memory_ != nullptr && memory_->reached() ? "the memory ceiling" : "the time limit";
  }

  /// What is left (zero once spent; clock::duration::max() when unlimited).
  clock::duration left() const noexcept {
    if (memory_ != nullptr && memory_->reached()) return clock::duration::zero();
    if (!limited()) return clock::duration::max();
    return std::max(clock::duration::zero(), deadline_ - clock::now());
  }

  /// The first `numerator / denominator` of what is left; unlimited stays unlimited.
  time_budget share(std::int64_t numerator, std::int64_t denominator) const noexcept {
    if (!limited()) return *this;
    const clock::time_point now = clock::now();
    const clock::duration rest = std::max(clock::duration::zero(), deadline_ - now);
    return until(std::min(deadline_, now + rest * numerator / denominator)).with(memory_);
  }

  /// This budget less `reserve` kept back for a later phase (the deadline
  /// moves earlier; unlimited stays unlimited).
  time_budget less(clock::duration reserve) const noexcept {
    if (!limited()) return *this;
    const clock::time_point now = clock::now();
    return until(deadline_ - now > reserve ? deadline_ - reserve : now).with(memory_);
  }

  /// The earlier of this budget and `other`.
  time_budget at_most(const time_budget& other) const noexcept {
    return until(std::min(deadline_, other.deadline_)).with(memory_ != nullptr ? memory_ : other.memory_);
  }

 private:
  time_budget with(memory_ceiling* ceiling) const noexcept {
    time_budget b = *this;
    b.memory_ = ceiling;
    return b;
  }

  clock::time_point deadline_ = clock::time_point::max();
  memory_ceiling* memory_ = nullptr;
};

}  // namespace remat
