// Solver scalability: every method of remat::solve over five suites. Run them
// all and render docs/benchmarks.md with `bench/report`; one suite by hand:
//   meson setup build-release --buildtype=release && meson compile -C build-release bench_solvers
//   build-release/bench/bench_solvers --benchmark_filter='^nas/' --remat_point_seconds=10
//
// Suites (benchmark names, each followed by /iterations:1/manual_time; <method> as
// remat::to_string spells it):
//   zoo/<method>/<model>             the 18 zoo models at the seeds' sizes
//   nas/<method>/cells:N             NetworkCIFAR stacks of N DARTS cells, N = 1, 2, 4, ..., 1024, then
//                                    1900 (10⁵ nodes)
//   random/<method>/nodes:N          random layered DAGs of 100–1,000 nodes (width 5, edge density 0.3)
//   chain/<method>/nodes:N           chains of 100 to 10⁶ nodes (widths drawn from 64–256)
//   shaped/exact/<shape>/...         ResNet-, DenseNet-, PSPNet-shaped graphs of 1,000–2,700 nodes
//   pareto/<model>                   remat::pareto_frontier on the zoo's ResNets and DenseNet-121, in the
//                                    graph's order (not in bench/report: run it by hand)
//
// One benchmark is one point, measured as measure.hpp says. Google
// Benchmark's real_time (UseManualTime) is the median process CPU time of the
// solve over its runs, its cpu_time the CPU time of the first run (the one
// its timer sees; complexity fits choose their order from it); the counters
// carry the wall median, the run count and the rest.
//
// Along a size series a method stops at its first point that shows it has
// reached its limit: an exact method (exact, dp, ogc-exact) that is no longer
// proven optimal, any method that returns no plan, that hits its time limit,
// runs over the per-point budget or over the heap budget; or before a point
// its growth so far predicts to take over twice the budget. The points after
// it are skipped with the reason, so the report can say where and why each
// method stopped. The first point of every series always runs: Google
// Benchmark 1.7 crashes computing the complexity of a family with no run.
//
// Gaps. `gap` is the plan's peak over the exact optimum of the same graph,
// minus one, where `exact` proved one in this process (gap_vs_optimum = 1),
// else over the per-op floor (gap_vs_optimum = 0). `fh_gap` is the same for
// Feng & Huang's objective, against ogc-exact's optimum or its lower bound.
// So `exact` and `ogc-exact` run first on every graph.
//
// Options of this program (beside Google Benchmark's own):
//   --remat_point_seconds=S   solver time limit and per-point budget (default 10)
//   --remat_budget_seconds=S  wall-clock budget of this process; later points are skipped (default: none)
//   --remat_heap_gib=G        heap a single solve may hold (default 4)

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/solve.hpp>
#include <remat/solvers/pareto.hpp>
#include <remat/zoo/generators.hpp>
#include <remat/zoo/models.hpp>

#include "bench/measure.hpp"
#include "tests/support/shaped_graphs.hpp"

namespace {

using remat::method;

struct settings {
  double point_seconds = 10;
  double budget_seconds = 0;  // 0: no budget
  double heap_gib = 4;
};

settings config;
const auto process_start = std::chrono::steady_clock::now();

// Counting lower sets beyond this costs more than it tells.
constexpr std::uint64_t lower_set_count_cap = 1'000'000;

struct graph_entry {
  remat::graph g;
  std::uint64_t lower_sets = 0;  // with gradient-order constraints, as `exact` counts them
  bool lower_sets_capped = false;
};

struct objective_reference {
  double objective = 0;
  double lower_bound = 0;
  bool optimal = false;
};

// A method's progress along a size series.
struct series_state {
  std::string stopped;  // where and why it stopped; empty while it runs
  double last_nodes = 0, last_seconds = 0;
  double previous_nodes = 0, previous_seconds = 0;
};

std::map<std::string, graph_entry> graphs;                     // graph key -> graph
std::map<std::string, std::uint64_t> optimum_peak;             // graph key -> exact's proven optimum
std::map<std::string, objective_reference> optimum_objective;  // graph key -> ogc-exact's result
std::map<std::string, series_state> series_states;              // series -> progress

const graph_entry& graph_for(const std::string& key, const std::function<remat::graph()>& build) {
  if (auto found = graphs.find(key); found != graphs.end()) return found->second;
  graph_entry entry{build()};
  const remat::precedence order = remat::gradient_order_constraints(entry.g);
  remat::lower_set_options count;
  count.max_count = lower_set_count_cap;
  count.constraints = &order;
  count.time = remat::time_budget::within(std::chrono::milliseconds(2000));
  const remat::lower_set_count counted = remat::count_lower_sets(entry.g, count);
  entry.lower_sets = counted.count;
  entry.lower_sets_capped = counted.status != remat::enumeration_status::complete;
  return graphs.emplace(key, std::move(entry)).first->second;
}

bool proves_optimality(method m) { return m == method::exact || m == method::dp || m == method::ogc_exact; }

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", seconds);
  return text;
}

// Why this point ends its series, if it does.
std::optional<std::string> stop_reason(method m, const remat::solution& s, const graph_entry& entry,
                                       const remat::bench::measurement& t, const remat::solve_options& options) {
  const std::string limit = seconds_text(config.point_seconds);
  if (t.cpu_max > config.point_seconds)
    return "time: " + seconds_text(t.cpu_max) + " of CPU, over the " + limit + " budget per point";
  if (s.status == remat::solve_status::stopped) return "time limit: no plan within " + limit;
  if (s.status == remat::solve_status::infeasible) return "no plan";
  if (proves_optimality(m) && s.status != remat::solve_status::optimal) {
    if (m == method::exact && entry.lower_sets > options.max_lower_sets)
      return "cap: more than " + std::to_string(options.max_lower_sets) + " lower sets";
    if (s.stats.time_limit_reached || t.wall_median >= config.point_seconds)
      return "time limit: not proven optimal within " + limit;
    if (m == method::ogc_exact) return "cap: " + std::to_string(options.max_segment_labels) + " labels";
    return "cap: not proven optimal within the state cap";
  }
  if (s.stats.time_limit_reached) return "time limit: " + limit;
  return std::nullopt;
}

// The next point's time if it grows as it did between the last two sizes
// (at least linearly): a method that just met the budget can take ten times
// it at the next size, and the solvers' time limits are not all hard.
std::optional<std::string> predicted_overrun(const series_state& series, double nodes) {
  if (series.previous_seconds < 1e-3 || series.last_seconds < 1e-3 || series.last_nodes <= series.previous_nodes)
    return std::nullopt;
  const double growth = std::log(series.last_seconds / series.previous_seconds) /
                        std::log(series.last_nodes / series.previous_nodes);
  const double exponent = std::clamp(growth, 1.0, 4.0);
  const double predicted = series.last_seconds * std::pow(nodes / series.last_nodes, exponent);
  if (predicted <= 2 * config.point_seconds) return std::nullopt;
  char text[200];
  std::snprintf(text, sizeof text,
                "predicted time: about %.3g s (time grew as nodes^%.2g over the last two sizes), over twice the "
                "%.3g s budget per point",
                predicted, exponent, config.point_seconds);
  return text;
}

void set_gap_counters(benchmark::State& state, method m, const std::string& key, const remat::solution& s) {
  if (!remat::has_plan(s)) return;
  const auto peak = static_cast<double>(s.figures.peak_bytes);
  const auto optimum = optimum_peak.find(key);
  const bool against_optimum = proves_optimality(m) && m != method::ogc_exact
                                   ? s.status == remat::solve_status::optimal
                                   : optimum != optimum_peak.end();
  const double reference = against_optimum && optimum != optimum_peak.end()
                               ? static_cast<double>(optimum->second)
                               : static_cast<double>(s.peak_lower_bound);
  if (reference > 0) {
    state.counters["gap"] = peak / reference - 1;
    state.counters["gap_vs_optimum"] = against_optimum ? 1 : 0;
  }
  if (m != method::ogc && m != method::ogc_exact) return;
  state.counters["fh_objective_bytes"] = s.objective;
  if (m == method::ogc_exact) {
    objective_reference ref{s.objective, s.objective, s.status == remat::solve_status::optimal};
    if (!ref.optimal) ref.lower_bound = s.objective_lower_bound;
    optimum_objective[key] = ref;
  }
  const auto ref = optimum_objective.find(key);
  if (ref == optimum_objective.end()) return;
  const double against = ref->second.optimal ? ref->second.objective : ref->second.lower_bound;
  if (against <= 0) return;
  state.counters["fh_gap"] = s.objective / against - 1;
  state.counters["fh_gap_vs_optimum"] = ref->second.optimal ? 1 : 0;
}

// Pauses Google Benchmark's timer while measure() does its bookkeeping.
struct benchmark_timer {
  benchmark::State& state;
  void pause() { state.PauseTiming(); }
  void resume() { state.ResumeTiming(); }
};

std::chrono::milliseconds point_time_limit() {
  return std::chrono::milliseconds(static_cast<std::int64_t>(config.point_seconds * 1000));
}

// Times `run` as measure.hpp says, within the heap budget; `stopped()` says
// whether the run just measured hit its time limit.
template <class Run, class Stopped>
remat::bench::measurement measure_point(benchmark::State& state, Run&& run, Stopped&& stopped) {
  remat::bench::measure_options how;
  how.heap_budget = static_cast<std::size_t>(config.heap_gib * (1ull << 30));
  remat::bench::measurement t;
  for (auto _ : state) {
    t = remat::bench::measure(run, [&](double) { return !stopped(); }, how, benchmark_timer{state});
    if (!t.out_of_memory) state.SetIterationTime(t.cpu_median);
  }
  return t;
}

// One point: graph `key` (built by `build` the first time), method `m`.
// `series` is empty for points outside a size series (the zoo).
void solve_point(benchmark::State& state, const std::string& key, const std::function<remat::graph()>& build,
                 method m, const std::string& series, bool first_of_series) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - process_start).count();
  series_state* progress = series.empty() ? nullptr : &series_states[series];
  auto skip = [&](const std::string& why) {
    state.SkipWithError(why.c_str());
    for (auto _ : state) {
    }
  };
  if (progress && !progress->stopped.empty() && !first_of_series) return skip("not run: " + progress->stopped);
  if (config.budget_seconds > 0 && elapsed > config.budget_seconds && !first_of_series)
    return skip("not run: the suite's time budget was spent");

  const graph_entry& entry = graph_for(key, build);
  if (progress && !first_of_series) {
    if (const auto overrun = predicted_overrun(*progress, static_cast<double>(entry.g.size()))) {
      progress->stopped = "stopped at " + key + " (" + *overrun + ")";
      return skip("not run: " + *overrun);
    }
  }
  remat::solve_options options;
  options.method = m;
  options.time_limit = point_time_limit();
  // A size series measures how far exact's proof over stage plans reaches;
  // its general first step (a fixed work count) is measured on the zoo.
  if (!series.empty()) options.general_search_work = 0;

  remat::solution s;
  const remat::bench::measurement t = measure_point(
      state, [&] { s = remat::solve(entry.g, options); }, [&] { return s.stats.time_limit_reached; });
  if (t.out_of_memory) {
    char budget[32];
    std::snprintf(budget, sizeof budget, "%.3g GiB", config.heap_gib);
    const std::string why = std::string("memory: over the ") + budget + " heap budget of a solve";
    if (progress) progress->stopped = "stopped at " + key + " (" + why + ")";
    state.SkipWithError(why.c_str());
    return;
  }
  if (m == method::exact && s.status == remat::solve_status::optimal) optimum_peak[key] = s.figures.peak_bytes;

  const remat::graph& g = entry.g;
  state.SetComplexityN(static_cast<benchmark::IterationCount>(g.size()));
  auto& c = state.counters;
  c["nodes"] = static_cast<double>(g.size());
  c["edges"] = static_cast<double>(g.num_edges());
  c["lower_sets"] = static_cast<double>(entry.lower_sets);
  c["lower_sets_capped"] = entry.lower_sets_capped ? 1 : 0;
  c["states"] = static_cast<double>(s.stats.count("lower sets"));
  c["stages"] = static_cast<double>(s.stats.count("stages evaluated"));
  c["labels"] = static_cast<double>(s.stats.count("labels"));
  c["cpu_s"] = t.cpu_median;
  c["wall_s"] = t.wall_median;
  c["cpu_min_s"] = t.cpu_min;
  c["cpu_max_s"] = t.cpu_max;
  c["runs"] = static_cast<double>(t.runs);
  c["heap_bytes"] = static_cast<double>(t.heap_peak);
  if (t.rss_growth) c["rss_bytes"] = static_cast<double>(*t.rss_growth);
  c["optimal"] = s.status == remat::solve_status::optimal ? 1 : 0;
  c["time_limit_reached"] = s.stats.time_limit_reached ? 1 : 0;
  c["cap_reached"] = s.stats.cap_reached ? 1 : 0;
  if (remat::has_plan(s)) {
    c["plan_peak_bytes"] = static_cast<double>(s.figures.peak_bytes);
    c["lower_bound_bytes"] = static_cast<double>(s.peak_lower_bound);
    c["recompute_s"] = s.figures.recompute_time;
  }
  set_gap_counters(state, m, key, s);

  std::string label(remat::to_string(s.status));
  if (progress) {
    progress->previous_nodes = std::exchange(progress->last_nodes, static_cast<double>(g.size()));
    progress->previous_seconds = std::exchange(progress->last_seconds, t.cpu_median);
    if (const auto why = stop_reason(m, s, entry, t, options)) {
      progress->stopped = "stopped at " + key + " (" + *why + ")";
      label += "; stop: " + *why;
    }
  }
  state.SetLabel(label);
}

// `exact` and `ogc-exact` first (the others' gaps refer to them), then the
// rest in remat::all_methods order.
std::vector<method> methods_in_run_order() {
  std::vector<method> order{method::exact, method::ogc_exact};
  for (method m : remat::all_methods)
    if (m != method::exact && m != method::ogc_exact) order.push_back(m);
  return order;
}

// The zoo suite has one time budget for all its points: the methods that may
// run to their time limit on the larger models (`approx`, `ogc-exact`, `dp`)
// go last, so a short budget cuts them and not the fast ones. `ogc-exact`
// still precedes `ogc`, whose gap refers to it.
std::vector<method> zoo_run_order() {
  return {method::exact, method::chain, method::mincut, method::sqrt, method::every_k, method::none,
          method::approx, method::ogc_exact, method::kept_search, method::general_search, method::ogc, method::dp};
}

void register_zoo() {
  const std::vector<method> order = zoo_run_order();
  if (order.size() != std::size(remat::all_methods)) {
    std::fprintf(stderr, "bench_solvers: zoo_run_order() lists %zu methods, remat has %zu\n", order.size(),
                 std::size(remat::all_methods));
    std::exit(2);
  }
  for (method m : order) {
    for (const auto& model : remat::zoo::models()) {
      const std::string name = "zoo/" + std::string(remat::to_string(m)) + "/" + model.name;
      benchmark::RegisterBenchmark(name.c_str(), [model, m](benchmark::State& state) {
        solve_point(state, "zoo:" + model.name, [&] { return remat::zoo::build(model.name); }, m, "", false);
      })->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
    }
  }
}

// A size series: one family per method, one point per size.
void register_series(const std::string& suite, const std::string& arg_name, const std::vector<std::int64_t>& sizes,
                     const std::vector<method>& methods,
                     const std::function<remat::graph(std::int64_t)>& build) {
  for (method m : methods) {
    const std::string family = suite + "/" + std::string(remat::to_string(m));
    auto* b = benchmark::RegisterBenchmark(family.c_str(), [=](benchmark::State& state) {
      const std::int64_t size = state.range(0);
      solve_point(state, suite + ":" + arg_name + "=" + std::to_string(size), [&] { return build(size); }, m,
                  family, size == sizes.front());
    });
    b->ArgName(arg_name)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond)->Complexity(benchmark::oAuto);
    for (std::int64_t size : sizes) b->Arg(size);
  }
}

// The whole frontier of one zoo model: its time, its points, and whether it
// is exact or sampled.
void register_pareto() {
  for (const char* model : {"resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "densenet121"}) {
    const std::string name = std::string("pareto/") + model;
    benchmark::RegisterBenchmark(name.c_str(), [model](benchmark::State& state) {
      const remat::graph g = remat::zoo::build(model);
      remat::pareto_options options;
      options.order = remat::order_choice::graph;
      remat::pareto_result r;
      const remat::bench::measurement t = measure_point(
          state,
          [&] {
            options.time = remat::time_budget::within(point_time_limit());
            r = remat::pareto_frontier(g, options);
          }, [&] { return r.stats.time_limit_reached; });
      if (t.out_of_memory) return state.SkipWithError("memory: over the heap budget");
      auto& c = state.counters;
      c["nodes"] = static_cast<double>(g.size());
      c["points"] = static_cast<double>(r.points.size());
      c["optimal"] = r.status == remat::solve_status::optimal ? 1 : 0;
      c["labels"] = static_cast<double>(r.stats.count("labels"));
      c["cpu_s"] = t.cpu_median;
      c["runs"] = static_cast<double>(t.runs);
      c["heap_bytes"] = static_cast<double>(t.heap_peak);
      state.SetLabel(std::string(remat::to_string(r.status)) + (r.stats.time_limit_reached ? "; time limit" : ""));
    })->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  }
}

void register_suites() {
  register_zoo();

  std::vector<std::int64_t> cells;
  for (std::int64_t n = 1; n <= 1024; n *= 2) cells.push_back(n);
  cells.push_back(1900);
  register_series("nas", "cells", cells, methods_in_run_order(), [](std::int64_t n) {
    remat::zoo::nas_stack_options o;
    o.network.cells = n;
    return remat::zoo::nas_stack(o);
  });

  // Activation-dominated (batch 4096 of 256 features, 256 KiB of weights a
  // linear), so that plans differ; density 0.3 gives about 2.3 edges a node.
  register_series("random", "nodes", {100, 250, 500, 1000}, methods_in_run_order(), [](std::int64_t n) {
    remat::zoo::random_dag_options o;
    o.width = 5;
    o.layers = n / o.width;
    o.density = 0.3;
    o.seed = 1;
    o.batch = 4096;
    o.features = 256;
    return remat::zoo::random_dag(o);
  });

  register_series("chain", "nodes", {100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000},
                  methods_in_run_order(), [](std::int64_t n) {
                    remat::zoo::chain_options o;
                    o.length = n;
                    o.batch = 4096;
                    o.features = 64;
                    o.max_features = 256;
                    o.seed = 1;
                    return remat::zoo::chain(o);
                  });

  const std::vector<method> exact_only{method::exact};
  register_series("shaped/resnet-like", "blocks", {100, 150, 200}, exact_only,
                  [](std::int64_t n) { return remat::test::resnet_like(static_cast<std::size_t>(n)); });
  register_series("shaped/densenet-like", "layers", {36, 54, 72}, exact_only,
                  [](std::int64_t n) { return remat::test::densenet_like(4, static_cast<std::size_t>(n)); });
  register_series("shaped/pspnet-like", "blocks", {100, 150}, exact_only,
                  [](std::int64_t n) { return remat::test::pspnet_like(static_cast<std::size_t>(n)); });
  register_pareto();
}

// Takes this program's --remat_* options out of argv; false on a bad one.
bool parse_settings(int& argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    double* target = nullptr;
    std::string_view value;
    for (auto [flag, field] : {std::pair{std::string_view("--remat_point_seconds="), &config.point_seconds},
                               std::pair{std::string_view("--remat_budget_seconds="), &config.budget_seconds},
                               std::pair{std::string_view("--remat_heap_gib="), &config.heap_gib}}) {
      if (arg.substr(0, flag.size()) == flag) {
        target = field;
        value = arg.substr(flag.size());
      }
    }
    if (target == nullptr) {
      if (arg.substr(0, 8) == "--remat_") {
        std::fprintf(stderr, "bench_solvers: unknown option '%s'\n", argv[i]);
        return false;
      }
      argv[kept++] = argv[i];
      continue;
    }
    char* end = nullptr;
    const std::string text(value);
    *target = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || *target < 0) {
      std::fprintf(stderr, "bench_solvers: '%s' needs a non-negative number\n", argv[i]);
      return false;
    }
  }
  argc = kept;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!parse_settings(argc, argv)) return 1;
  register_suites();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("remat_point_seconds", std::to_string(config.point_seconds));
  benchmark::AddCustomContext("remat_budget_seconds", std::to_string(config.budget_seconds));
  benchmark::AddCustomContext("remat_heap_gib", std::to_string(config.heap_gib));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
