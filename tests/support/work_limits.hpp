#pragma once

// Checks shared by the bounds that a work limit can stop early.

#include <cstdint>
#include <initializer_list>

#include <doctest/doctest.h>

namespace remat::test {

// `floor_at(limit)` runs a floor's search within `limit` work units and
// returns its result (bytes, complete, work). At each of `limits` (all below
// what the complete search takes) the search stops, past its limit, with a
// bound no higher than the complete one, `complete_bytes`, and no lower than
// at the smaller limits (states are settled cheapest first); at one limit it
// gives the same bound twice, since work, not time, stops it.
template <class FloorAt>
void check_stopped_by_work(std::initializer_list<std::uint64_t> limits, std::uint64_t complete_bytes,
                           FloorAt&& floor_at) {
  std::uint64_t before = 0;
  for (std::uint64_t limit : limits) {
    CAPTURE(limit);
    const auto stopped = floor_at(limit);
    CHECK_FALSE(stopped.complete);
    CHECK(stopped.work > limit);
    CHECK(stopped.bytes <= complete_bytes);
    CHECK(stopped.bytes >= before);
    before = stopped.bytes;
    CHECK(floor_at(limit).bytes == stopped.bytes);
  }
}

}  // namespace remat::test
