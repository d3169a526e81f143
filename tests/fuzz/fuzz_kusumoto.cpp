// Bytes -> the Kusumoto text IR reader. A file either fails with a
// remat::error or gives a graph that write_kusumoto writes and the reader
// reads back unchanged (the format has no times: both reads derive them from
// the function types, so they must agree as well).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <remat/io/kusumoto.hpp>

#include "graph_equal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  remat::graph g;
  try {
    g = remat::io::read_kusumoto(text);
  } catch (const remat::error&) {
    return 0;
  }
  const remat::graph back = remat::io::read_kusumoto(remat::io::write_kusumoto(g));
  remat::fuzz::require_same_graph(g, back);
  return 0;
}
