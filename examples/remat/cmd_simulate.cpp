// remat simulate FILE PLAN: exact figures of any plan file.

#include <remat/io/plan_json.hpp>

#include "cli.hpp"

namespace remat::cli {

void add_simulate_command(CLI::App& app) {
  struct options {
    std::string file, plan_file, timeline;
    bool json = false;
  };
  auto opt = std::make_shared<options>();
  auto* cmd = app.add_subcommand("simulate", "Simulate a plan file: exact peak bytes, time and timeline");
  cmd->add_option("FILE", opt->file, "graph file (remat JSON or Kusumoto IR)")->required();
  cmd->add_option("PLAN", opt->plan_file, "plan file (steps, kept tensors or stages)")->required();
  cmd->add_option("--timeline", opt->timeline, "write the per-step memory by category as CSV");
  cmd->add_flag("--json", opt->json, "print JSON instead of a table");
  cmd->callback([opt] {
    output_files outputs;
    outputs.reserve("--timeline", opt->timeline, {opt->file, opt->plan_file});
    const graph g = io::load_graph(opt->file);
    const plan p = io::read_plan_json(io::read_text_file(opt->plan_file), g, opt->plan_file);
    const simulation sim = simulate(g, p.steps, {.record_timeline = !opt->timeline.empty()});
    const simulation regular = simulate(g, plan_none(g).steps);
    report out;
    out.row("graph", fmt::format("{} ({} nodes)", g.name(), g.size()), g.name());
    out.row("plan", fmt::format("{} ({} steps)", opt->plan_file, p.steps.size()), opt->plan_file);
    add_figures(out, g, p, sim, regular);
    if (!opt->timeline.empty()) {
      std::string csv =
          "step,kind,node,activations,recomputed,gradients,parameter_gradients,parameters,inputs,workspace,total\n";
      for (std::size_t i = 0; i < sim.timeline.size(); ++i) {
        const memory_breakdown& m = sim.timeline[i];
        csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", i, to_string(p.steps[i].kind),
                           g.node_name(p.steps[i].node), m.activations, m.recomputed, m.gradients,
                           m.parameter_gradients, m.parameters, m.inputs, m.workspace, m.total());
      }
      outputs.set(opt->timeline, std::move(csv));
      out.row("timeline written", opt->timeline, opt->timeline);
    }
    outputs.commit();
    out.print(opt->json);
  });
}

}  // namespace remat::cli
