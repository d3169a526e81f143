// remat info FILE: what a graph is and what regular training needs.

#include <remat/io/dot.hpp>

#include "cli.hpp"

namespace remat::cli {

void add_info_command(CLI::App& app) {
  struct options {
    std::string file, dot;
    bool json = false;
  };
  auto opt = std::make_shared<options>();
  auto* cmd = app.add_subcommand("info", "Nodes, edges, bytes, the regular-training peak, the per-op, cut and backward-order floors");
  cmd->add_option("FILE", opt->file, "graph file (remat JSON or Kusumoto IR)")->required();
  cmd->add_option("--dot", opt->dot, "write the graph as Graphviz DOT");
  cmd->add_flag("--json", opt->json, "print JSON instead of a table");
  cmd->callback([opt] {
    output_files outputs;
    outputs.reserve("--dot", opt->dot, {opt->file});
    const graph g = io::load_graph(opt->file);
    const plan regular_plan = plan_none(g);
    const simulation regular = simulate(g, regular_plan.steps);
    const backward_floor at_backward = backward_floors(g);
    const op_floor floor = per_op_floor(g, at_backward);
    const cut_floor cut = cut_floor_of(g, at_backward, floor.bytes);
    const backward_order_floor order = backward_order_floor_of(g);
    std::size_t inputs = 0;
    for (node_id v = 0; v < g.size(); ++v) inputs += g.is_input(v);
    report out;
    out.row("graph", fmt::format("{} ({})", g.name(), opt->file), g.name());
    out.row("nodes", fmt::format("{} ({} inputs, {} computed)", g.size(), inputs, g.size() - inputs), g.size());
    out.row("edges", fmt::format("{}", g.num_edges()), g.num_edges());
    out.row("parameters", bytes_with_exact(g.param_bytes()), g.param_bytes());
    out.row("inputs", bytes_with_exact(g.input_bytes()), g.input_bytes());
    out.row("activations", bytes_with_exact(g.activation_bytes()) + "  (all outputs together)", g.activation_bytes());
    out.row("regular peak",
            fmt::format("{}  (keep what backward reads; {})", bytes_with_exact(regular.peak_bytes),
                        describe_step(g, regular_plan.steps, regular.peak_step)),
            regular.peak_bytes);
    out.row("per-op floor",
            fmt::format("{}  ({}; no plan goes below)", bytes_with_exact(floor.bytes), describe_floor(g, floor)),
            floor.bytes);
    if (cut.bytes > floor.bytes)
      out.row("cut floor",
              fmt::format("{}  ({}; no plan goes below)", bytes_with_exact(cut.bytes), describe_cut_floor(g, cut)),
              cut.bytes);
    if (order.bytes > std::max(floor.bytes, cut.bytes))
      out.row("order floor",
              fmt::format("{}  (the backward-order floor: {}; no plan goes below)", bytes_with_exact(order.bytes),
                          describe_order_floor(g, order)),
              order.bytes);
    out.row("time", fmt::format("forward {:.6g} s, backward {:.6g} s", g.forward_time(), g.total_backward_time()),
            {{"forward", g.forward_time()}, {"backward", g.total_backward_time()}});
    if (!opt->dot.empty()) {
      outputs.set(opt->dot, io::write_dot(g));
      out.row("dot written", opt->dot, opt->dot);
    }
    outputs.commit();
    out.print(opt->json);
  });
}

}  // namespace remat::cli
