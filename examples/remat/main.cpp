// remat: plan and inspect gradient checkpointing for computation graphs.

#include <cstdlib>
#include <fstream>
#include <iostream>

#include <remat/io/dot.hpp>
#include <remat/io/plan_json.hpp>

#include "cli.hpp"

namespace {

using namespace remat;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw error("cannot write '" + path + "'");
  out << text;
  if (!out) throw error("cannot write '" + path + "'");
}

void run_info(const std::string& file, bool as_json) {
  const graph g = io::load_graph(file);
  const simulation regular = simulate(g, plan_none(g).steps);
  const op_floor floor = per_op_floor(g);
  std::size_t inputs = 0;
  for (node_id v = 0; v < g.size(); ++v) inputs += g.is_input(v);
  cli::report out;
  out.row("graph", fmt::format("{} ({})", g.name(), file), g.name());
  out.row("nodes", fmt::format("{} ({} inputs, {} computed)", g.size(), inputs, g.size() - inputs), g.size());
  out.row("edges", fmt::format("{}", g.num_edges()), g.num_edges());
  out.row("parameters", cli::bytes_with_exact(g.param_bytes()), g.param_bytes());
  out.row("inputs", cli::bytes_with_exact(g.input_bytes()), g.input_bytes());
  out.row("activations", cli::bytes_with_exact(g.activation_bytes()) + "  (all outputs together)",
          g.activation_bytes());
  out.row("regular peak",
          fmt::format("{}  (keep what backward reads; {})", cli::bytes_with_exact(regular.peak_bytes),
                      cli::describe_step(g, plan_none(g).steps, regular.peak_step)),
          regular.peak_bytes);
  out.row("per-op floor",
          fmt::format("{}  ({} of '{}'; no plan goes below)", cli::bytes_with_exact(floor.bytes),
                      floor.backward ? "backward" : "forward", g.node_name(floor.node)),
          floor.bytes);
  out.row("time", fmt::format("forward {:.6g} s, backward {:.6g} s", g.forward_time(), g.total_backward_time()),
          {{"forward", g.forward_time()}, {"backward", g.total_backward_time()}});
  out.print(as_json);
}

struct plan_args {
  std::string file, method = "sqrt", output, dot;
  std::size_t k = 4;
  bool json = false;
};

void run_plan(const plan_args& a) {
  const graph g = io::load_graph(a.file);
  plan p;
  if (a.method == "none") p = plan_none(g);
  else if (a.method == "every-k") p = plan_every_k(g, a.k);
  else if (a.method == "sqrt") p = plan_sqrt(g);
  else throw error("unknown method '" + a.method + "' (expected none, every-k or sqrt)");
  const simulation sim = simulate(g, p.steps);
  const simulation regular = simulate(g, plan_none(g).steps);
  cli::report out;
  out.row("graph", fmt::format("{} ({} nodes)", g.name(), g.size()), g.name());
  cli::add_figures(out, g, p, sim, regular);
  if (!a.output.empty()) {
    write_file(a.output, io::write_plan_json(g, p, sim));
    out.row("plan written", a.output, a.output);
  }
  if (!a.dot.empty()) {
    write_file(a.dot, io::write_dot(g, p.steps));
    out.row("dot written", a.dot, a.dot);
  }
  out.print(a.json);
}

void run_simulate(const std::string& file, const std::string& plan_file, bool as_json, const std::string& timeline) {
  const graph g = io::load_graph(file);
  const plan p = io::read_plan_json(io::read_text_file(plan_file), g, plan_file);
  const simulation sim = simulate(g, p.steps, {.record_timeline = !timeline.empty()});
  const simulation regular = simulate(g, plan_none(g).steps);
  cli::report out;
  out.row("graph", fmt::format("{} ({} nodes)", g.name(), g.size()), g.name());
  out.row("plan", fmt::format("{} ({} steps)", plan_file, p.steps.size()), plan_file);
  cli::add_figures(out, g, p, sim, regular);
  if (!timeline.empty()) {
    std::string csv = "step,kind,node,activations,recomputed,gradients,parameter_gradients,parameters,inputs,workspace,total\n";
    for (std::size_t i = 0; i < sim.timeline.size(); ++i) {
      const memory_breakdown& m = sim.timeline[i];
      csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", i, to_string(p.steps[i].kind),
                         g.node_name(p.steps[i].node), m.activations, m.recomputed, m.gradients,
                         m.parameter_gradients, m.parameters, m.inputs, m.workspace, m.total());
    }
    write_file(timeline, csv);
    out.row("timeline written", timeline, timeline);
  }
  out.print(as_json);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"remat: plans gradient checkpointing for a computation graph and tells, in bytes, what it saves.\n"
               "Graph files: remat JSON (docs/graph-format.md) or Kusumoto et al.'s text IR."};
  app.set_version_flag("--version", REMAT_VERSION_STRING);
  app.require_subcommand(1);

  bool json = false;
  std::string file;
  auto* info = app.add_subcommand("info", "Nodes, edges, bytes, the regular-training peak and the per-op floor");
  info->add_option("FILE", file, "graph file")->required();
  info->add_flag("--json", json, "print JSON instead of a table");

  plan_args pa;
  auto* plan_cmd = app.add_subcommand("plan", "Make a checkpointing plan and report what it costs");
  plan_cmd->add_option("FILE", pa.file, "graph file")->required();
  plan_cmd->add_option("--method", pa.method, "none | every-k | sqrt")
      ->check(CLI::IsMember({"none", "every-k", "sqrt"}))
      ->capture_default_str();
  plan_cmd->add_option("-k", pa.k, "for every-k: keep every k-th tensor")->check(CLI::PositiveNumber)->capture_default_str();
  plan_cmd->add_option("-o,--output", pa.output, "write the plan (schedule and figures) as JSON");
  plan_cmd->add_option("--dot", pa.dot, "write the graph under the plan as Graphviz DOT");
  plan_cmd->add_flag("--json", pa.json, "print JSON instead of a table");

  std::string plan_file, timeline;
  auto* sim_cmd = app.add_subcommand("simulate", "Simulate a plan file: exact peak bytes, time and timeline");
  sim_cmd->add_option("FILE", file, "graph file")->required();
  sim_cmd->add_option("PLAN", plan_file, "plan file (steps, kept tensors or stages)")->required();
  sim_cmd->add_option("--timeline", timeline, "write the per-step memory by category as CSV");
  sim_cmd->add_flag("--json", json, "print JSON instead of a table");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*info) run_info(file, json);
    else if (*plan_cmd) run_plan(pa);
    else if (*sim_cmd) run_simulate(file, plan_file, json, timeline);
  } catch (const std::exception& e) {
    std::cerr << "remat: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
