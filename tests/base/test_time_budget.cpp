// The one time limit: a deadline, or none, shared between phases.

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
  CHECK_FALSE(none.less(1s).limited());
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
  const time_budget reserved = hour.less(10min);
  CHECK(reserved.deadline() == hour.deadline() - 10min);
  CHECK(hour.less(2h).expired());  // more reserved than is left: nothing left
  CHECK(hour.at_most(quarter).deadline() == quarter.deadline());
  CHECK(quarter.at_most(time_budget::unlimited()).deadline() == quarter.deadline());
  CHECK(time_budget::unlimited().at_most(hour).deadline() == hour.deadline());
}
