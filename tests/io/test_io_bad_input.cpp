// Hostile graph and plan files (issue 26): each gives one remat::error naming
// the file, quickly and in memory proportional to the file, never a crash or a
// foreign exception.

#include <doctest/doctest.h>

#include <atomic>
#include <cfloat>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <remat/io/json.hpp>
#include <remat/io/kusumoto.hpp>
#include <remat/io/load.hpp>
#include <remat/io/plan_json.hpp>
#include <remat/solvers/baselines.hpp>

#include "../support/small_graphs.hpp"

using namespace remat;
namespace fs = std::filesystem;

namespace {

// A directory of its own under the system's temporary directory, removed at the end.
class temp_dir {
 public:
  temp_dir() {
    static std::atomic<int> count{0};
    path_ = fs::temp_directory_path() /
            ("remat-io-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "-" +
             std::to_string(count++));
    fs::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The message of the remat::error `run` throws; any other exception is
// reported as such, so the checks on the message fail.
template <class F>
std::string error_of(F&& run) {
  try {
    run();
  } catch (const error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a remat::error: ") + e.what();
  }
  return "no error";
}

// The error loading `file` gives, and the seconds it took.
struct timed_error {
  std::string message;
  double seconds;
};

timed_error load_error(const fs::path& file) {
  const auto start = std::chrono::steady_clock::now();
  std::string message = error_of([&] { (void)io::load_graph(file); });
  return {std::move(message), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

std::string plan_error(const graph& g, const fs::path& file) {
  return error_of([&] { (void)io::read_plan_json(io::read_text_file(file), g, file.string()); });
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

node_spec node(std::string name, std::string op, std::vector<std::size_t> inputs, double time) {
  node_spec s;
  s.name = std::move(name);
  s.op = std::move(op);
  s.inputs = std::move(inputs);
  s.bytes = 4;
  s.time = time;
  return s;
}

std::string nested_array(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

const std::string two_nodes = R"({"version": 1, "name": "two", "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "y", "op": "relu", "inputs": ["x"], "bytes": 64, "time": 1}
]}
)";

}  // namespace

TEST_SUITE("io") {

TEST_CASE("bad input: a deeply nested value is refused at a bounded depth, never recursed into") {
  temp_dir dir;
  for (const std::size_t depth : {std::size_t{80000}, std::size_t{1000000}}) {
    CAPTURE(depth);
    const fs::path version = dir.write("version.json", "{\"version\": " + nested_array(depth) + ", \"nodes\": []}\n");
    auto e = load_error(version);
    CHECK(contains(e.message, version.string() + ":1:"));
    CHECK(contains(e.message, "nested deeper than"));
    CHECK(e.seconds < 0.5);

    const fs::path format = dir.write("format.json", "{\"format\":\n" + nested_array(depth) + "}\n");
    e = load_error(format);
    CHECK(contains(e.message, format.string() + ":2:"));

    const graph g = test::diamond();
    const fs::path plan = dir.write("plan.json", "{\"format\": " + nested_array(depth) + "}");
    CHECK(contains(plan_error(g, plan), plan.string() + ":1:"));
    const fs::path plan_version = dir.write("plan-version.json", "{\"version\": " + nested_array(depth) + "}");
    CHECK(contains(plan_error(g, plan_version), plan_version.string() + ":1:"));
  }
  // A value shallow enough to read is described by its type, not written out.
  std::string many = "1";
  for (int i = 0; i < 50000; ++i) many += ",1";
  const fs::path wide = dir.write("wide.json", "{\"version\": [" + many + "], \"nodes\": []}");
  const std::string message = load_error(wide).message;
  CHECK(contains(message, "wide.json:1:"));
  CHECK(contains(message, "version must be an integer, got an array"));
  CHECK(message.size() < 200);
}

TEST_CASE("bad input: Kusumoto IR counts larger than the file allocate nothing and are named") {
  temp_dir dir;
  for (const std::string header : {"100000000 0", "2147483648 0", "1 18446744073709551614", "0 4000000000000000000"}) {
    CAPTURE(header);
    const fs::path file = dir.write("cg.txt", header + "\n");
    const auto e = load_error(file);
    CHECK(contains(e.message, file.string() + ":2: truncated file"));
    CHECK(contains(e.message, "cannot fit in the 1 byte after it"));
    CHECK(e.seconds < 0.5);
  }
  // Counts that fit the file stop at the first missing line all the same.
  const fs::path truncated = dir.write("short.txt", "1 0\n0 10\n");
  const std::string e = load_error(truncated).message;
  CHECK(contains(e, "short.txt:3: truncated file: expected the variable's name"));
  CHECK(!contains(e, "cannot fit"));
}

TEST_CASE("bad input: nlohmann's exceptions never escape the readers") {
  temp_dir dir;
  SUBCASE("a number past the largest double is a parse error with line and column") {
    const fs::path huge = dir.write("huge.json", R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "y", "op": "relu", "inputs": ["x"], "bytes": 64, "time": 1e309}
]})");
    const std::string e = load_error(huge).message;
    CHECK(contains(e, huge.string() + ":3:"));
    CHECK(contains(e, "number overflow parsing '1e309'"));
  }
  SUBCASE("\"kept\" next to \"steps\" is checked like \"kept\" alone") {
    const fs::path kept = dir.write("kept.json", "{\"steps\": [],\n \"kept\": \"a\"}");
    const std::string e = plan_error(test::diamond(), kept);
    CHECK(contains(e, kept.string() + ":2:"));
    CHECK(contains(e, "kept must be an array of node names"));
  }
  SUBCASE("an attribute list entry past int64 is refused, not wrapped around") {
    const fs::path attr = dir.write("attr.json", R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16, "attrs": {"shape": [1, 18446744073709551615]}}]})");
    const std::string e = load_error(attr).message;
    CHECK(contains(e, attr.string() + ":2:"));
    CHECK(contains(e, "does not fit a 64-bit signed integer"));
  }
  SUBCASE("a key given twice would silently keep one of its values") {
    const fs::path twice = dir.write("twice.json", R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16, "bytes": 32}]})");
    const std::string e = load_error(twice).message;
    CHECK(contains(e, twice.string() + ":2:"));
    CHECK(contains(e, "duplicate key 'bytes'"));
  }
}

TEST_CASE("bad input: names that are not UTF-8 are refused by both readers; writers never throw") {
  temp_dir dir;
  const fs::path ir = dir.write("cg.txt", "2 2\n0 4 _\n1 4 b\xff\nforward\n1 1\n0 _\n1\nReLU\n{}\n"
                                          "backward\n2 1\n1 gradient\n1 output\n0\nReLU\n{}\n");
  std::string e = load_error(ir).message;
  CHECK(contains(e, ir.string() + ":3: "));
  CHECK(contains(e, "not valid UTF-8"));
  const fs::path type = dir.write("type.txt", "2 2\n0 4 _\n1 4 _\nforward\n1 1\n0 _\n1\nRe\xc0LU\n{}\n"
                                              "backward\n1 1\n1 gradient\n0\nRe\xc0LU\n{}\n");
  CHECK(contains(load_error(type).message, type.string() + ":8: "));
  const fs::path json = dir.write("g.json", "{\"version\": 1, \"nodes\": [\n{\"name\": \"x\xff\", \"op\": \"input\", \"bytes\": 1}]}");
  e = load_error(json).message;
  CHECK(contains(e, json.string() + ":2:"));
  CHECK(contains(e, "UTF-8"));

  // A graph made in code may still carry such names: the writers replace the
  // bad bytes rather than throw after a search.
  graph_builder b("g\xff");
  b.add(node("x\xff", "input", {}, 0));
  b.add(node("y", "re\xfflu", {0}, 1));
  const graph g = std::move(b).build();
  std::string text;
  CHECK_NOTHROW(text = io::write_graph_json(g));
  CHECK(contains(text, "x\xef\xbf\xbd"));
  const plan p = plan_none(g);
  CHECK_NOTHROW(text = io::write_plan_json(g, p, simulate(g, p.steps)));
  CHECK(contains(text, "g\xef\xbf\xbd"));
}

TEST_CASE("bad input: times whose totals pass the largest double are refused") {
  temp_dir dir;
  const fs::path forward = dir.write("forward.json", R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "a", "op": "relu", "inputs": ["x"], "bytes": 64, "time": 1e308, "backward_time": 0},
  {"name": "b", "op": "relu", "inputs": ["a"], "bytes": 64, "time": 1e308, "backward_time": 0}
]})");
  std::string e = load_error(forward).message;
  CHECK(contains(e, forward.string() + ":4:"));
  CHECK(contains(e, "node 'b'"));
  CHECK(contains(e, "past the largest double"));

  // The default backward time, twice the forward, overflows on its own.
  const fs::path doubled = dir.write("doubled.json", R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "a", "op": "relu", "inputs": ["x"], "bytes": 64, "time": 1.5e308}
]})");
  e = load_error(doubled).message;
  CHECK(contains(e, doubled.string() + ":3:"));
  CHECK(contains(e, "node 'a'"));

  // Forward and backward totals each fit, their sum (the simulator's plain time) does not.
  const fs::path both = dir.write("both.json", R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "a", "op": "relu", "inputs": ["x"], "bytes": 64, "time": 1.5e308, "backward_time": 1.5e308}
]})");
  CHECK(contains(load_error(both).message, both.string() + ":3:"));

  // The IR reader's times come from its options.
  const fs::path ir = dir.write("cg.txt", "2 2\n0 4 _\n1 4 _\nforward\n1 1\n0 _\n1\nReLU\n{}\n"
                                          "backward\n1 1\n1 gradient\n0\nReLU\n{}\n");
  e = error_of([&] { (void)io::read_kusumoto(io::read_text_file(ir), ir.string(), {.other_time = DBL_MAX}); });
  CHECK(contains(e, ir.string()));
  CHECK(contains(e, "past the largest double"));

  // A graph made in code gets the same check.
  graph_builder b("big");
  b.add(node("x", "input", {}, 0));
  b.add(node("a", "relu", {0}, DBL_MAX));
  b.add(node("b", "relu", {1}, DBL_MAX));
  b[1].backward_time = b[2].backward_time = 0.0;
  try {
    (void)std::move(b).build();
    FAIL("built a graph whose forward time is infinite");
  } catch (const invalid_graph& failure) {
    CHECK(failure.node() == "b");
    CHECK(contains(failure.what(), "graph 'big'"));
  }
}

TEST_CASE("bad input: an IR round trip keeps what a backward reads on a node without operands") {
  using enum backward_reads;
  for (const backward_reads reads : {none, inputs, output, both})
    for (const std::uint64_t params : {std::uint64_t{0}, std::uint64_t{8}}) {
      CAPTURE(to_string(reads));
      CAPTURE(params);
      graph_builder b("constant");
      b.add(node("c", "constant", {}, 1));
      b[0].params = params;
      b[0].reads = reads;
      b.add(node("y", "relu", {0}, 1));
      b[1].reads = output;
      const graph g = std::move(b).build();
      const graph back = io::read_kusumoto(io::write_kusumoto(g));
      REQUIRE(back.size() == g.size());
      CHECK(back.reads(0) == reads);
      CHECK(back.params(0) == params);
      CHECK(back.reads(1) == output);
      CHECK(io::write_kusumoto(back) == io::write_kusumoto(g));
    }
}

TEST_CASE("bad input: an IR attribute line ending in carriage returns reads back as it was written") {
  // Fuzz finding (tests/fuzz/corpus/fuzz_kusumoto/kusumoto-attrs-carriage-returns.txt): the
  // reader kept all but one '\r' of the line, so the written file read back other attributes.
  const std::string text = "2 2\n0 4 _\n1 4 y\n"
                           "forward\n1 1\n0 _\n1\nReLU\n{\"a\": 1}  \r\r\r\t\r\n"
                           "backward\n2 1\n1 gradient\n1 output\n0\nReLU\n{}\r\r\n";
  const graph g = io::read_kusumoto(text);
  REQUIRE(g.attrs(1).contains("ir_attrs"));
  CHECK(std::get<std::string>(g.attrs(1).at("ir_attrs")) == "{\"a\": 1}");
  const graph back = io::read_kusumoto(io::write_kusumoto(g));
  CHECK(back.attrs(1) == g.attrs(1));
  CHECK(io::write_kusumoto(back) == io::write_kusumoto(g));
}

TEST_CASE("bad input: the IR writer refuses, naming the node, what the IR would read back otherwise") {
  auto refusal = [](const std::string& op, std::uint64_t input_params, const std::string* attrs) {
    graph_builder b("g");
    b.add(node("x", "input", {}, 4));
    b[0].params = input_params;
    b.add(node("y", op, {0}, 4));
    if (attrs) b[1].attrs.emplace("ir_attrs", *attrs);
    const graph g = std::move(b).build();
    try {
      (void)io::write_kusumoto(g);
    } catch (const invalid_graph& e) {
      return std::string(e.what()) + " | " + e.node();
    }
    return std::string("written");
  };
  CHECK(refusal("relu", 0, nullptr) == "written");
  const std::string fine = "{\"k\": \"a b\"}";
  CHECK(refusal("relu", 0, &fine) == "written");
  CHECK(refusal("re lu", 0, nullptr) == "cannot write node 'y' in the Kusumoto IR: its op is not one token | y");
  CHECK(refusal("", 0, nullptr) == "cannot write node 'y' in the Kusumoto IR: its op is not one token | y");
  CHECK(refusal("relu", 8, nullptr) ==
        "cannot write node 'x' in the Kusumoto IR: it is an input with parameter bytes | x");
  for (const std::string attrs : {"{\"a\":\n1}", "", " {}", "{}\r", "{\"a\": \"\xff\"}"}) {
    CAPTURE(attrs);
    CHECK(refusal("relu", 0, &attrs) ==
          "cannot write node 'y' in the Kusumoto IR: its ir_attrs is not one UTF-8 line without white space at "
          "either end | y");
  }
}

TEST_CASE("bad input: a directory, a missing file and an unreadable one are named for what they are") {
  temp_dir dir;
  const fs::path folder = dir.path() / "graph.json";
  fs::create_directories(folder);
  CHECK(load_error(folder).message == "'" + folder.string() + "' is a directory");
  CHECK(error_of([&] { (void)io::read_text_file(folder); }) == "'" + folder.string() + "' is a directory");

  const fs::path missing = dir.path() / "missing.json";
  CHECK(load_error(missing).message == "cannot open '" + missing.string() + "': No such file or directory");

  const fs::path locked = dir.write("locked.json", two_nodes);
  fs::permissions(locked, fs::perms::none);
  if (!std::ifstream(locked)) {  // root reads it all the same
    CHECK(load_error(locked).message == "cannot open '" + locked.string() + "': Permission denied");
  }
}

TEST_CASE("bad input: a plan written for another graph is refused, naming both graphs") {
  temp_dir dir;
  const graph diamond = test::diamond();
  const plan p = plan_none(diamond);
  const fs::path file = dir.write("plan.json", io::write_plan_json(diamond, p, simulate(diamond, p.steps)));

  // Same node names, another graph.
  graph other = test::diamond();
  other.set_name("other");
  std::string e = plan_error(other, file);
  CHECK(contains(e, file.string() + ":"));
  CHECK(contains(e, "'diamond'"));
  CHECK(contains(e, "'other'"));

  // The diamond with the loss's bytes and the first convolution's time given.
  using enum backward_reads;
  auto diamond_with = [](std::uint64_t loss_bytes, double conv_time) {
    return test::build("diamond", {{"x", "input", {}, 10},
                                   {"a", "conv2d", {"x"}, 100, inputs, 16, conv_time},
                                   {"b", "relu", {"a"}, 200, output, 0, 1},
                                   {"c", "conv2d", {"a"}, 300, inputs, 32, 1},
                                   {"d", "add", {"b", "c"}, 40, none, 0, 1},
                                   {"e", "loss", {"d"}, loss_bytes, inputs, 0, 1}});
  };
  // Same name and node names, other sizes: the fingerprint tells them apart.
  const graph resized = diamond_with(9, 1);
  e = plan_error(resized, file);
  CHECK(contains(e, file.string() + ":"));
  CHECK(contains(e, "fingerprint"));

  // Times are not part of it: a re-timed graph takes the same plan.
  const graph retimed = diamond_with(8, 7);
  CHECK(io::read_plan_json(io::read_text_file(file), retimed, file.string()).steps == p.steps);

  // A plan without a fingerprint (older files) is checked by name alone; one
  // without a graph name is not checked.
  const fs::path old = dir.write("old.json", R"({"graph": "diamond", "kept": ["a", "b", "d"]})");
  CHECK(io::read_plan_json(io::read_text_file(old), resized, old.string()).steps == p.steps);
  CHECK(contains(plan_error(other, old), "'other'"));
  CHECK(io::read_plan_json(R"({"kept": ["a", "b", "d"]})", other).steps == p.steps);
}

}  // TEST_SUITE
