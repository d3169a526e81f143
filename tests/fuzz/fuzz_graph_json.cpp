// Bytes -> remat's graph JSON reader. A document either fails with a
// remat::error or gives a graph that the writer writes and the reader reads
// back unchanged; any other exception escapes to libFuzzer as a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <remat/io/json.hpp>

#include "graph_equal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  remat::graph g;
  try {
    g = remat::io::read_graph_json(text);
  } catch (const remat::error&) {
    return 0;
  }
  // What the writer wrote must read; an error here is a finding too.
  const remat::graph back = remat::io::read_graph_json(remat::io::write_graph_json(g));
  remat::fuzz::require_same_graph(g, back);
  return 0;
}
