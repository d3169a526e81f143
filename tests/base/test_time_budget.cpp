// The one time limit: a deadline, or none, shared between phases; and the
// work limit beside it.

#include <chrono>
#include <cmath>
#include <limits>

#include <doctest/doctest.h>

#include <remat/time_budget.hpp>

using namespace remat;
using namespace std::chrono_literals;

TEST_CASE("no limit is the default, never expires, and its shares have none either") {
  const time_budget none;
  CHECK_FALSE(none.limited());
  CHECK_FALSE(none.expired());
  CHECK(none.left() == time_budget::clock::duration::max());
  CHECK_FALSE(none.share(1, 4).limited());
  CHECK_FALSE(none.less(1s, 1, 4).limited());
  CHECK_FALSE(none.less_time(1s).limited());
  CHECK_FALSE(time_budget::unlimited().limited());
}

TEST_CASE("a limit of zero, a negative one or NaN is spent at once, never read as no limit") {
  CHECK(time_budget::within(0ms).expired());
  CHECK(time_budget::within(-5s).expired());
  CHECK(time_budget::within(std::chrono::duration<double>(std::nan(""))).expired());
  CHECK(time_budget::within(std::chrono::duration<double>(0.0004)).limited());
}

TEST_CASE("a limit past the clock's range is no limit, without overflow") {
  CHECK_FALSE(time_budget::within(std::chrono::duration<double>(1e300)).limited());
  CHECK_FALSE(time_budget::within(std::chrono::duration<double>(std::numeric_limits<double>::infinity())).limited());
  CHECK(time_budget::within(std::chrono::hours(24 * 365)).limited());
}

TEST_CASE("shares end within the budget they come from") {
  const time_budget hour = time_budget::within(1h);
  CHECK(hour.limited());
  CHECK(hour.left() <= 1h);
  CHECK(hour.left() > 59min);
  const time_budget quarter = hour.share(1, 4);
  CHECK(quarter.deadline() <= hour.deadline());
  CHECK(quarter.left() <= 15min);
  CHECK(quarter.left() > 14min);
  CHECK(hour.share(1, 1).deadline() <= hour.deadline());
  const time_budget reserved = hour.less_time(10min);
  CHECK(reserved.deadline() == hour.deadline() - 10min);
  CHECK(hour.less_time(2h).expired());  // more reserved than is left: nothing left
  CHECK(hour.less(10min, 1, 4).deadline() == hour.deadline() - 10min);  // the smaller: 10 min
  CHECK(hour.less(1h, 1, 4).deadline() <= hour.deadline() - 14min);     // the smaller: a quarter
  CHECK(hour.less(1h, 1, 4).deadline() >= hour.deadline() - 15min);
  CHECK(hour.next(1min).deadline() <= quarter.deadline());
  CHECK(quarter.next(2h).deadline() == quarter.deadline());
  CHECK(time_budget::unlimited().next(1min).limited());
  CHECK(hour.next(0s).expired());
}

TEST_CASE("a work limit ends a budget after the work charged, whatever the clock says") {
  work_meter meter;
  const time_budget work = time_budget::unlimited().with_work(meter, 1000);
  CHECK(work.work_limited());
  CHECK_FALSE(work.limited());
  CHECK_FALSE(work.charge(999));
  CHECK(work.work_left() == 1);
  CHECK(work.charge(1));
  CHECK(work.expired());
  CHECK(work.spent_on() == "the work limit");
  CHECK(meter.ended_by_work());
  CHECK_FALSE(meter.ended_by_time());
}

TEST_CASE("shares of a work limit split the work left, and every share charges the same meter") {
  work_meter meter;
  const time_budget budget = time_budget::within(1h).with_work(meter, 1000);
  const time_budget half = budget.share(1, 2);
  CHECK(half.work_left() == 500);
  CHECK_FALSE(half.charge(400));
  CHECK(budget.work_left() == 600);
  CHECK(half.charge(100));
  CHECK_FALSE(budget.expired());
  // less and next reckon in work (a nanosecond a unit) and keep back the
  // same fraction of the time, so the time limit stays the farther one.
  const time_budget kept_back = budget.less(std::chrono::nanoseconds(200), 1, 2);
  CHECK(kept_back.work_left() == 300);
  CHECK(kept_back.deadline() < budget.deadline() - 10min);
  const time_budget next = budget.next(std::chrono::nanoseconds(100));
  CHECK(next.work_left() == 100);
  CHECK(next.left() > 11min);  // a fifth of the work left, a fifth of the hour
  CHECK(next.left() <= 12min);
  const budget_mark before = budget.mark();
  CHECK(budget.has_left(before));
  budget.charge(300);  // 300 done since the mark, 200 left
  CHECK_FALSE(budget.has_left(before));
  CHECK(budget.extended(std::chrono::seconds(1), 50).work_left() == 250);
}

TEST_CASE("a time deadline that ends a share is noted on the meter") {
  work_meter meter;
  const time_budget spent = time_budget::within(0ms).with_work(meter, 1000);
  CHECK(spent.expired());
  CHECK(meter.ended_by_time());
  CHECK_FALSE(meter.ended_by_work());
  CHECK(spent.spent_on() == "the time limit");
}
