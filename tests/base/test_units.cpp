#include <doctest/doctest.h>

#include <remat/units.hpp>

using remat::format_bytes;
using remat::parse_bytes;

TEST_CASE("byte sizes print in binary units") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_bytes(3ULL << 30) == "3.00 GiB");
  CHECK(format_bytes(150ULL << 20) == "150.0 MiB");
}

TEST_CASE("byte sizes parse with and without units") {
  CHECK(parse_bytes("4096") == 4096U);
  CHECK(parse_bytes("3GiB") == 3ULL << 30);
  CHECK(parse_bytes("3 G") == 3ULL << 30);
  CHECK(parse_bytes("1.5 GB") == 1500000000U);
  CHECK(parse_bytes("2kib") == 2048U);
  CHECK(parse_bytes("18446744073709551615") == 18446744073709551615ULL);
  CHECK(!parse_bytes("18446744073709551616"));
  CHECK(!parse_bytes("lots"));
  CHECK(!parse_bytes("-3GiB"));
  CHECK(!parse_bytes("3 parsecs"));
  CHECK(!parse_bytes(""));
}
