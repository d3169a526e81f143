// remat plan FILE --method ...: make a plan and report what it costs.

#include <remat/io/dot.hpp>
#include <remat/io/plan_json.hpp>

#include "cli.hpp"

namespace remat::cli {

void add_plan_command(CLI::App& app) {
  struct options {
    std::string file, method = "sqrt", output, dot;
    std::size_t k = 4;
    bool json = false;
  };
  auto opt = std::make_shared<options>();
  auto* cmd = app.add_subcommand("plan", "Make a checkpointing plan and report what it costs");
  cmd->add_option("FILE", opt->file, "graph file (remat JSON or Kusumoto IR)")->required();
  cmd->add_option("--method", opt->method, "none | every-k | sqrt")
      ->check(CLI::IsMember({"none", "every-k", "sqrt"}))
      ->capture_default_str();
  cmd->add_option("-k", opt->k, "for every-k: keep every k-th tensor")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("-o,--output", opt->output, "write the plan (schedule and figures) as JSON");
  cmd->add_option("--dot", opt->dot, "write the graph under the plan as Graphviz DOT");
  cmd->add_flag("--json", opt->json, "print JSON instead of a table");
  cmd->callback([opt] {
    const graph g = io::load_graph(opt->file);
    plan p;
    if (opt->method == "none") p = plan_none(g);
    else if (opt->method == "every-k") p = plan_every_k(g, opt->k);
    else p = plan_sqrt(g);
    const simulation sim = simulate(g, p.steps);
    const simulation regular = simulate(g, plan_none(g).steps);
    report out;
    out.row("graph", fmt::format("{} ({} nodes)", g.name(), g.size()), g.name());
    add_figures(out, g, p, sim, regular);
    if (!opt->output.empty()) {
      write_file(opt->output, io::write_plan_json(g, p, sim));
      out.row("plan written", opt->output, opt->output);
    }
    if (!opt->dot.empty()) {
      write_file(opt->dot, io::write_dot(g, p.steps));
      out.row("dot written", opt->dot, opt->dot);
    }
    out.print(opt->json);
  });
}

}  // namespace remat::cli
