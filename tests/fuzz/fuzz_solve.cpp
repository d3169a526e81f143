// Bytes -> a small DAG and solve options -> remat::solve with any method, and
// the solution's claims checked against the simulator and the bounds:
// - the plan simulates to exactly the figures the solution reports, the
//   claimed peak is the simulated one and the claimed recompute the simulated
//   one up to rounding (see close_or_above);
// - every computed node is computed once (later evaluations are recomputes)
//   and runs its backward once, after its compute;
// - the peak is at least the per-op floor and the solution's own lower bound,
//   a plan within the budget recomputes at least the recompute bound, the
//   objective is at least its bound;
// - optimal and feasible plans meet the budget, an infeasible plan (every
//   method but the stage programmes returns one) does not; stopped solutions hold
//   no plan; infeasible names a smallest feasible budget above the budget (or
//   none);
// - without a budget the status is never infeasible.
// solve may not throw for valid options, so nothing is caught.
//
// Input layout (bytes past the end read 0):
// - method: an index into all_methods;
// - flags: bit 0 time objective, bits 1-2 the order_choice, bit 3 no
//   gradient-order preservation, bit 4 times in tenths (else eighths), bits
//   5-6 the byte unit (1, 2^10, 2^20, 2^30);
// - budget: 255 none, else a fraction of [floor - 1, regular training's peak + 1];
// - caps: bits 0-1 max_lower_sets, bits 2-3 max_segment_labels, bits 4-6
//   every_k - 1, bit 7 a 5 ms bound time (else none);
// - then per node, up to 300: a flags byte (bit 7 graph input: only its
//   bytes follow; bits 0-1 backward reads; bits 2, 3, 4: parameter,
//   workspace, backward workspace bytes follow; bits 5-6 operand count, 3
//   meaning 3 + a byte % 6), its bytes, its time, the optional sizes, and a
//   byte per operand picking one of the earlier nodes (0: the one before).

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include <remat/remat.hpp>

namespace {

class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return size_ == 0; }
  // Past the end every byte reads 0, so a truncated input still decodes.
  std::uint8_t next() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

constexpr std::size_t max_nodes = 300;

// The options and the solution's claims, printed with a finding.
std::string context;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "solve invariant broken: %s\n%s", what, context.c_str());
  std::abort();
}

void require(bool ok, const char* what) {
  if (!ok) finding(what);
}

remat::graph decode_graph(byte_reader& in, unsigned shift, double time_unit) {
  remat::graph_builder builder;
  for (std::size_t i = 0; i < max_nodes && !in.empty(); ++i) {
    const std::uint8_t flags = in.next();
    remat::node_spec s;
    s.name = "n" + std::to_string(i);
    s.bytes = std::uint64_t{in.next()} << shift;
    const bool input = (flags & 0x80) != 0;
    if (input) {
      s.op = "input";
      builder.add(std::move(s));
      continue;
    }
    s.op = "op";
    s.time = in.next() * time_unit;
    s.reads = static_cast<remat::backward_reads>(flags & 3);
    if (flags & 0x04) s.params = std::uint64_t{in.next()} << shift;
    if (flags & 0x08) s.workspace = std::uint64_t{in.next()} << shift;
    if (flags & 0x10) s.backward_workspace = std::uint64_t{in.next()} << shift;
    std::size_t operands = (flags >> 5) & 3;
    if (operands == 3) operands += in.next() % 6;
    for (std::size_t k = 0; k < operands && i > 0; ++k) s.inputs.push_back(i - 1 - in.next() % i);
    builder.add(std::move(s));
  }
  return std::move(builder).build();
}

void check_schedule_shape(const remat::graph& g, const remat::schedule& steps) {
  std::vector<int> computes(g.size(), 0), backwards(g.size(), 0);
  for (const remat::step& s : steps) {
    if (s.kind == remat::step_kind::compute) ++computes[s.node];
    if (s.kind == remat::step_kind::backward) {
      require(computes[s.node] == 1, "a backward runs before its node's compute");
      ++backwards[s.node];
    }
  }
  for (std::size_t v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) require(computes[v] == 1 && backwards[v] == 1, "a node is not computed and differentiated once");
}

// Methods add times up in their own order: with times like 0.1 their sums
// differ from the simulator's in the last bits.
bool close_or_above(double a, double b) { return a >= b - 1e-9 * std::fabs(b); }

bool same_figures(const remat::simulation& a, const remat::simulation& b) {
  return a.peak_bytes == b.peak_bytes && a.peak_step == b.peak_step && a.at_peak == b.at_peak &&
         a.forward_time == b.forward_time && a.recompute_time == b.recompute_time &&
         a.backward_time == b.backward_time && a.recompute_steps == b.recompute_steps;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  byte_reader in(data, size);
  const std::uint8_t method_byte = in.next(), flags = in.next(), budget_byte = in.next(), caps = in.next();
  if (in.empty()) return 0;  // no nodes: the builder rejects the graph, nothing to solve
  constexpr unsigned shifts[] = {0, 10, 20, 30};
  const remat::graph g = decode_graph(in, shifts[(flags >> 5) & 3], (flags & 0x10) ? 0.1 : 0.125);

  remat::solve_options o;
  o.method = remat::all_methods[method_byte % std::size(remat::all_methods)];
  o.goal = (flags & 1) ? remat::objective::time : remat::objective::memory;
  o.order = static_cast<remat::order_choice>((flags >> 1) & 3);
  o.preserve_gradient_order = (flags & 0x08) == 0;
  // The work limit ends the searches, so a finding replays the same way on
  // any machine; the time limit is the backstop.
  o.work_limit = 5'000'000;
  o.time_limit = std::chrono::milliseconds(20);
  constexpr std::uint64_t lower_set_caps[] = {20000, 200, 20, 1};
  constexpr std::uint64_t label_caps[] = {4'000'000, 1000, 50, 1};
  o.max_lower_sets = lower_set_caps[caps & 3];
  o.max_segment_labels = label_caps[(caps >> 2) & 3];
  o.every_k = 1 + ((caps >> 4) & 7);
  o.bound_time_limit = std::chrono::milliseconds((caps & 0x80) ? 5 : 0);

  // Budgets from just below the per-op floor (none meets it) to regular
  // training's peak (every plan family has a plan within it), or none.
  const std::uint64_t floor = remat::per_op_floor(g).bytes;
  const std::uint64_t top = remat::simulate(g, remat::plan_none(g).steps).peak_bytes;
  if (budget_byte != 255) {
    const std::uint64_t low = floor == 0 ? 0 : floor - 1;
    o.budget = low + static_cast<std::uint64_t>(static_cast<unsigned __int128>(top + 1 - low) * budget_byte / 254);
  }

  const remat::solution s = remat::solve(g, o);
  char summary[1024];
  std::snprintf(summary, sizeof summary,
                "%zu nodes, method %s, objective %s, order %s, budget %llu, floor %llu\n"
                "status %s, claimed peak %llu, claimed recompute %.17g, simulated peak %llu, recompute %.17g\n"
                "bounds: peak %llu, recompute %.17g, objective %.17g of %.17g\n",
                g.size(), std::string(remat::to_string(o.method)).c_str(),
                o.goal == remat::objective::time ? "time" : "memory", std::string(remat::to_string(o.order)).c_str(),
                static_cast<unsigned long long>(o.budget), static_cast<unsigned long long>(floor),
                std::string(remat::to_string(s.status)).c_str(), static_cast<unsigned long long>(s.claimed_peak),
                s.claimed_recompute, static_cast<unsigned long long>(s.figures.peak_bytes), s.figures.recompute_time,
                static_cast<unsigned long long>(s.peak_lower_bound), s.recompute_lower_bound, s.objective_lower_bound,
                s.objective);
  context = summary;
  const bool meets_budget = s.status == remat::solve_status::optimal || s.status == remat::solve_status::feasible;
  require(o.budget != remat::no_budget || s.status != remat::solve_status::infeasible, "infeasible without a budget");
  require(s.status != remat::solve_status::infeasible || s.smallest_feasible_budget == 0 ||
              s.smallest_feasible_budget > o.budget,
          "infeasible, yet the smallest feasible budget is within the budget");
  require(s.status != remat::solve_status::stopped || s.best.steps.empty(), "a stopped solution holds a plan");
  // Only the stage programmes drop the plan that missed the budget.
  if (!meets_budget && s.best.steps.empty()) return 0;
  remat::simulation sim;
  try {
    sim = remat::simulate(g, s.best.steps);
  } catch (const remat::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("the plan does not simulate");
  }
  check_schedule_shape(g, s.best.steps);
  require(same_figures(sim, s.figures), "the reported figures are not the simulator's");
  require(s.claimed_peak == sim.peak_bytes, "the claimed peak is not the simulated peak");
  require(close_or_above(s.claimed_recompute, sim.recompute_time) && close_or_above(sim.recompute_time, s.claimed_recompute),
          "the claimed recompute is not the simulated one");
  require(sim.peak_bytes >= floor, "the peak is below the per-op floor");
  require(o.goal != remat::objective::memory || sim.peak_bytes >= s.peak_lower_bound,
          "the peak is below the solution's lower bound");
  require(!meets_budget || o.goal != remat::objective::time || close_or_above(sim.recompute_time, s.recompute_lower_bound),
          "a plan within the budget recomputes less than the solution's bound");
  require(close_or_above(s.objective, s.objective_lower_bound), "the objective is below its bound");
  require((sim.peak_bytes <= o.budget) == meets_budget, "the status disagrees with the plan's peak and the budget");
  return 0;
}
