#include <doctest/doctest.h>

#include <remat/detail/block_vector.hpp>

#include <cstdint>
#include <vector>

using remat::detail::block_vector;

namespace {

struct record {
  std::uint64_t value;
  std::uint32_t index;
};

}  // namespace

TEST_CASE("a block vector keeps every element in place across block boundaries") {
  block_vector<record, 3> v;  // blocks of 8, 16, 32, ...
  CHECK(v.empty());
  std::vector<const record*> addresses;
  for (std::uint32_t i = 0; i < 100; ++i) {
    v.push_back({i * 7ULL, i});
    addresses.push_back(&v[i]);
  }
  REQUIRE(v.size() == 100);
  for (std::uint32_t i = 0; i < 100; ++i) {
    CHECK(&v[i] == addresses[i]);  // appending never moved it
    CHECK(v[i].value == i * 7ULL);
    CHECK(v[i].index == i);
  }
  v[42].value = 1;
  CHECK(v[42].value == 1);
}

TEST_CASE("a block vector iterates forward and backward in order") {
  block_vector<std::uint32_t, 1> v;  // blocks of 2, 4, 8, ...
  for (std::uint32_t i = 0; i < 11; ++i) v.push_back(i);
  std::vector<std::uint32_t> forward(v.begin(), v.end());
  std::vector<std::uint32_t> backward(v.rbegin(), v.rend());
  CHECK(forward == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(backward == std::vector<std::uint32_t>{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  std::uint32_t sum = 0;
  for (std::uint32_t x : v) sum += x;
  CHECK(sum == 55);
}

TEST_CASE("a cleared block vector reuses its blocks") {
  block_vector<std::uint64_t, 2> v;
  for (std::uint64_t i = 0; i < 9; ++i) v.push_back(i);
  const std::uint64_t* first = &v[0];
  v.clear();
  CHECK(v.empty());
  CHECK(v.begin() == v.end());
  for (std::uint64_t i = 0; i < 5; ++i) v.push_back(100 + i);
  CHECK(v.size() == 5);
  CHECK(&v[0] == first);
  CHECK(v[4] == 104);
}

TEST_CASE("a block vector's blocks of 2 MiB and more start on a 2 MiB boundary") {
  // Records of 16 bytes in blocks of 2^12, 2^13, ...: the 6th block (2^17
  // records, 2 MiB) is the first that large. Huge pages need that alignment.
  block_vector<record, 12> v;
  constexpr std::size_t first_large = ((std::size_t{1} << 5) - 1) << 12;  // where the 6th block starts
  static_assert(sizeof(record) == 16);
  for (std::size_t i = 0; i <= first_large + (std::size_t{1} << 17); ++i) v.push_back({i, static_cast<std::uint32_t>(i)});
  const auto address = [&](std::size_t i) { return reinterpret_cast<std::uintptr_t>(&v[i]); };
  constexpr std::uintptr_t two_mib = std::uintptr_t{2} << 20;
  CHECK(address(first_large) % two_mib == 0);
  CHECK(address(first_large + (std::size_t{1} << 17)) % two_mib == 0);  // the 7th block
  // Within a block the records are one array: the 5th block's 2^16 records end where its first plus 2^16 - 1 do.
  CHECK(address(first_large - 1) - address(first_large - (std::size_t{1} << 16)) ==
        ((std::size_t{1} << 16) - 1) * sizeof(record));
  CHECK(v[first_large].value == first_large);
  CHECK(v[first_large + (std::size_t{1} << 17)].index == first_large + (std::size_t{1} << 17));
}
