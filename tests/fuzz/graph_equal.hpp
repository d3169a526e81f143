#pragma once

// What the reader harnesses call "the same graph": every field a file format
// carries, node by node in id order. A graph input's backward reads and
// backward time are not compared: inputs are never differentiated, so the
// writers leave them out and a reader gives them their defaults.

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include <remat/remat.hpp>

namespace remat::fuzz {

[[noreturn]] inline void fail(const char* what, std::size_t node) {
  std::fprintf(stderr, "round trip changed %s of node %zu\n", what, node);
  std::abort();
}

inline void require_same_graph(const graph& a, const graph& b) {
  if (a.name() != b.name()) fail("the graph name", 0);
  if (a.size() != b.size()) fail("the node count", 0);
  for (std::size_t v = 0; v < a.size(); ++v) {
    if (a.node_name(v) != b.node_name(v)) fail("the name", v);
    if (a.op(v) != b.op(v)) fail("the op", v);
    if (a.is_input(v) != b.is_input(v)) fail("input-ness", v);
    if (a.bytes(v) != b.bytes(v)) fail("the bytes", v);
    if (a.time(v) != b.time(v)) fail("the time", v);
    if (a.params(v) != b.params(v)) fail("the params", v);
    if (a.workspace(v) != b.workspace(v)) fail("the workspace", v);
    if (a.backward_workspace(v) != b.backward_workspace(v)) fail("the backward workspace", v);
    if (!a.is_input(v) && a.backward_time(v) != b.backward_time(v)) fail("the backward time", v);
    if (!a.is_input(v) && a.reads(v) != b.reads(v)) fail("the backward reads", v);
    if (a.attrs(v) != b.attrs(v)) fail("the attributes", v);
    const auto ia = a.inputs(v), ib = b.inputs(v);
    if (!std::equal(ia.begin(), ia.end(), ib.begin(), ib.end())) fail("the inputs", v);
  }
}

}  // namespace remat::fuzz
