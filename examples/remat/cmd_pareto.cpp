// remat pareto FILE: the exact (peak, recompute) frontier, as a table, CSV or SVG.

#include <chrono>

#include <remat/solvers/pareto.hpp>

#include "cli.hpp"
#include "svg.hpp"

namespace remat::cli {

void add_pareto_command(CLI::App& app) {
  struct options {
    std::string file, csv, svg_out, order = "auto";
    double time_limit = 60;
    double work_limit = static_cast<double>(default_work_limit);
    bool json = false;
  };
  auto opt = std::make_shared<options>();
  auto* cmd = app.add_subcommand("pareto", "The exact frontier of peak bytes against recompute time");
  cmd->add_option("FILE", opt->file, "graph file (remat JSON or Kusumoto IR)")->required();
  cmd->add_option("--csv", opt->csv, "write the frontier as CSV");
  cmd->add_option("--svg", opt->svg_out, "draw the frontier as SVG");
  cmd->add_option("--time-limit", opt->time_limit, "seconds")->check(seconds_check(false))->capture_default_str();
  cmd->add_option("--work-limit", opt->work_limit, "work units (about 1e9 a second; 0: none): the same frontier on any machine")
      ->check(CLI::Range(0.0, 1.8e19))
      ->capture_default_str();
  cmd->add_option("--order", opt->order,
                  "execution order of the plans: graph | consumers-first | best (both, frontiers merged) | auto "
                  "(best past 20000 lower sets, else graph)")
      ->check(CLI::IsMember({"graph", "consumers-first", "best", "auto"}))
      ->capture_default_str();
  cmd->add_flag("--json", opt->json, "print JSON instead of a table");
  cmd->callback([opt] {
    output_files outputs;
    outputs.reserve("--csv", opt->csv, {opt->file});
    outputs.reserve("--svg", opt->svg_out, {opt->file});
    const graph g = io::load_graph(opt->file);
    const simulation regular = simulate(g, plan_none(g).steps);
    pareto_options po;
    po.max_peak = regular.peak_bytes;  // plans above regular training are never worth having
    work_meter work;
    po.time = remat::time_budget::within(to_milliseconds(opt->time_limit))
                  .with_work(work, opt->work_limit > 0 ? static_cast<std::uint64_t>(opt->work_limit)
                                                       : time_budget::no_work_limit());
    po.order = *parse_order_choice(opt->order);
    const pareto_result r = pareto_frontier(g, po);
    const double plain = regular.forward_time + regular.backward_time;
    if (!opt->csv.empty()) {
      std::string csv = "peak_bytes,recompute_seconds,overhead,least_recompute\n";
      for (const auto& p : r.points)
        csv += fmt::format("{},{},{},{}\n", p.peak, p.recompute, p.recompute / plain, p.least_recompute);
      outputs.set(opt->csv, std::move(csv));
    }
    if (!opt->svg_out.empty()) {
      svg::series line{"frontier (" + std::string(r.family == dp_family::exact ? "all lower-set chains" : "id intervals") + ")",
                       "#1f77b4", {}, true, true};
      for (const auto& p : r.points) line.points.emplace_back(static_cast<double>(p.peak) / (1 << 20), 100.0 * p.recompute / plain);
      std::vector<svg::mark> marks{{static_cast<double>(regular.peak_bytes) / (1 << 20), 0.0, "regular training", "#d62728"}};
      if (!r.points.empty())
        marks.push_back({static_cast<double>(r.points.front().peak) / (1 << 20), 100.0 * r.points.front().recompute / plain,
                         "least memory", "#2ca02c"});
      outputs.set(opt->svg_out, svg::chart(g.name() + ": peak memory against recompute", "peak (MiB)",
                                          "recompute overhead (% of forward + backward)", {line}, marks));
    }
    outputs.commit();
    if (opt->json) {
      nlohmann::json doc;
      doc["status"] = to_string(r.status);
      doc["message"] = r.message;
      doc["regular_peak"] = regular.peak_bytes;
      doc["points"] = nlohmann::json::array();
      for (const auto& p : r.points)
        doc["points"].push_back({{"peak", p.peak}, {"recompute", p.recompute}, {"least_recompute", p.least_recompute}});
      fmt::print("{}\n", doc.dump(2));
      return;
    }
    fmt::print("{}: {} ({}), {} points, {:.3f} s, {:.3g} work units\n", g.name(), to_string(r.status), r.message,
               r.points.size(), r.stats.seconds, static_cast<double>(work.done()));
    fmt::print("{:>14}  {:>12}  {:>9}\n", "peak", "recompute s", "overhead");
    for (const auto& p : r.points)
      fmt::print("{:>14}  {:>12.6g}  {:>8.1f}%{}\n", format_bytes(p.peak), p.recompute, 100.0 * p.recompute / plain,
                 p.least_recompute ? "" : "  (stand-in plan; recompute not minimised)");
    fmt::print("regular training: {}, no recompute\n", format_bytes(regular.peak_bytes));
  });
}

}  // namespace remat::cli
