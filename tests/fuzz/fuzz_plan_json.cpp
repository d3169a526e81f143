// Bytes -> the plan reader, against a fixed graph (examples/graphs/
// forum-cnn-full.json without its attributes: a chain into a three-way
// concat, parameters, two inputs, every kind of backward read). A plan either
// fails to read with a remat::error, or reads; then
// - its steps simulate, or fail with a remat::error (invalid_schedule);
// - when it was built from stages or a kept set (not from explicit steps),
//   the core's schedule builders made its steps, and those must simulate;
// - a plan that simulates is written and read back to the same steps.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <remat/io/json.hpp>
#include <remat/io/plan_json.hpp>
#include <remat/remat.hpp>

namespace {

constexpr std::string_view graph_text = R"({"format": "remat-graph", "version": 1, "name": "forum-cnn-full", "nodes": [
{"name": "x", "op": "input", "bytes": 15480000},
{"name": "conv1", "op": "conv2d", "inputs": ["x"], "bytes": 38700000, "time": 0.0003483, "params": 36200, "workspace": 4096, "backward_reads": "inputs"},
{"name": "relu1", "op": "relu", "inputs": ["conv1"], "bytes": 38700000, "time": 1.935e-06, "backward_reads": "output"},
{"name": "conv2", "op": "conv2d", "inputs": ["relu1"], "bytes": 19350000, "time": 0.000435375, "params": 45100, "backward_reads": "inputs"},
{"name": "relu2", "op": "relu", "inputs": ["conv2"], "bytes": 19350000, "time": 9.675e-07, "backward_reads": "output"},
{"name": "conv3", "op": "conv2d", "inputs": ["relu2"], "bytes": 7740000, "time": 8.7075e-05, "params": 9040, "backward_reads": "inputs"},
{"name": "relu3", "op": "relu", "inputs": ["conv3"], "bytes": 7740000, "time": 3.87e-07, "backward_reads": "output"},
{"name": "flatten", "op": "flatten", "inputs": ["relu3"], "bytes": 7740000, "time": 3.87e-07, "backward_reads": "none"},
{"name": "param1", "op": "linear", "inputs": ["flatten"], "bytes": 11965200, "time": 0.011576331, "params": 2315385852, "backward_reads": "inputs"},
{"name": "sigmoid", "op": "sigmoid", "inputs": ["param1"], "bytes": 11965200, "time": 5.9826e-07, "backward_reads": "output"},
{"name": "param2", "op": "linear", "inputs": ["flatten"], "bytes": 11965200, "time": 0.011576331, "params": 2315385852, "backward_reads": "inputs"},
{"name": "param3", "op": "linear", "inputs": ["flatten"], "bytes": 11965200, "time": 0.011576331, "params": 2315385852, "backward_reads": "inputs"},
{"name": "cat", "op": "concat", "inputs": ["sigmoid", "param2", "param3"], "bytes": 35895600, "time": 1.79478e-06, "backward_reads": "none"},
{"name": "target", "op": "input", "bytes": 35895600},
{"name": "loss", "op": "mse_loss", "inputs": ["cat", "target"], "bytes": 4, "time": 1.79478e-06, "backward_reads": "inputs"}]})";

const remat::graph& fixed_graph() {
  static const remat::graph g = remat::io::read_graph_json(graph_text, "forum-cnn-full");
  return g;
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const remat::graph& g = fixed_graph();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  remat::plan p;
  try {
    p = remat::io::read_plan_json(text, g);
  } catch (const remat::error&) {
    return 0;
  }
  const bool from_stages = p.stage_of.size() == g.size();
  const bool from_kept = p.kept.universe() == g.size() && p.steps == remat::schedule_from_kept(g, p.kept, p.order);
  remat::simulation sim;
  try {
    sim = remat::simulate(g, p.steps);
  } catch (const remat::error& e) {
    if (from_stages || from_kept) {
      std::fprintf(stderr, "%s\n", e.what());
      finding("a schedule the core built from stages or a kept set does not simulate");
    }
    return 0;
  }
  const remat::plan back = remat::io::read_plan_json(remat::io::write_plan_json(g, p, sim), g);
  if (back.steps != p.steps) finding("a written plan reads back with other steps");
  return 0;
}
