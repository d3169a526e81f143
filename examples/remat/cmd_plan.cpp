// remat plan FILE --method ...: make a plan and report what it costs.

#include <algorithm>
#include <chrono>

#include <remat/io/dot.hpp>
#include <remat/io/plan_json.hpp>
#include <remat/solve.hpp>

#include "cli.hpp"

namespace remat::cli {

namespace {

// The search's wall time, work and counts, in the words of the method that counted.
std::string search_summary(const solve_stats& stats) {
  std::string text = fmt::format("{:.3f} s, {:.3g} work units", stats.seconds, static_cast<double>(stats.work));
  for (const search_count& c : stats.counts) text += fmt::format(", {} {}", c.value, c.name);
  return text;
}

// The same as JSON: "seconds", "work" and one snake_case key per count.
nlohmann::json search_json(const solve_stats& stats) {
  nlohmann::json out{{"seconds", stats.seconds}, {"work", stats.work}};
  for (const search_count& c : stats.counts) {
    std::string key(c.name);
    std::replace(key.begin(), key.end(), ' ', '_');
    out[key] = c.value;
  }
  return out;
}

}  // namespace

void add_plan_command(CLI::App& app) {
  struct options {
    std::string file, method = "exact", objective = "memory", budget, max_memory, output, dot, order = "auto";
    std::size_t k = 4;
    double time_limit = 60;
    double work_limit = static_cast<double>(default_work_limit);
    double bound_time = 0.25;
    double general_work = static_cast<double>(exact_options{}.general_search_work);
    double max_recompute = 0;
    std::uint64_t max_lower_sets = 20000;
    bool json = false, quiet = false;
  };
  auto opt = std::make_shared<options>();
  auto* cmd = app.add_subcommand("plan", "Make a checkpointing plan and report what it costs");
  cmd->add_option("FILE", opt->file, "graph file (remat JSON or Kusumoto IR)")->required();
  std::vector<std::string> methods;
  std::string listed;
  for (method m : all_methods) {
    methods.emplace_back(to_string(m));
    listed += (listed.empty() ? "" : " | ") + methods.back();
  }
  cmd->add_option("--method", opt->method, listed)
      ->check(CLI::IsMember(methods))
      ->capture_default_str();
  cmd->add_option("--objective", opt->objective, "memory: least peak; time: least recompute within --budget")
      ->check(CLI::IsMember({"memory", "time"}))
      ->capture_default_str();
  cmd->add_option("--budget", opt->budget, "peak byte budget for --objective time, e.g. 3GiB, 1.5GB, 4096");
  cmd->add_option("--order", opt->order,
                  "execution order of the plan: graph (as the file numbers the nodes) | consumers-first (a value's "
                  "readers right after it) | best (exact and kept-search try both; other methods run in the graph's "
                  "order) | auto (exact: best past --max-lower-sets, else graph; kept-search: both)")
      ->check(CLI::IsMember({"graph", "consumers-first", "best", "auto"}))
      ->capture_default_str();
  cmd->add_option("-k", opt->k, "for every-k: stages of k nodes")->check(whole_number(1))->capture_default_str();
  cmd->add_option("--time-limit", opt->time_limit, "seconds before a search returns its best plan")
      ->check(seconds_check(false))
      ->capture_default_str();
  cmd->add_option("--work-limit", opt->work_limit,
                  "work units before a search returns its best plan (about 1e9 a second; 0: none). Unlike "
                  "--time-limit it gives the same plan on any machine, busy or not")
      ->check(CLI::Range(0.0, 1.8e19))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", opt->quiet, "no live progress on stderr (shown on a terminal after a second)");
  cmd->add_option("--max-memory", opt->max_memory,
                  "memory the search may take, e.g. 2GiB: past it the method returns its best plan and says so");
  cmd->add_option("--max-lower-sets", opt->max_lower_sets, "above this many lower sets, exact falls back")
      ->check(whole_number(0))
      ->capture_default_str();
  cmd->add_option("--bound-time", opt->bound_time,
                  "seconds exact spends on a lower bound above the per-op floor when its plan is not proven (0: none)")
      ->check(seconds_check(true))
      ->capture_default_str();
  add_general_plan_options(cmd, opt->general_work, opt->max_recompute);
  cmd->add_option("-o,--output", opt->output, "write the plan (schedule and figures) as JSON");
  cmd->add_option("--dot", opt->dot, "write the graph under the plan as Graphviz DOT");
  cmd->add_flag("--json", opt->json, "print JSON instead of a table");
  cmd->callback([opt] {
    output_files outputs;
    outputs.reserve("--output", opt->output, {opt->file});
    outputs.reserve("--dot", opt->dot, {opt->file});
    const graph g = io::load_graph(opt->file);
    solve_options so;
    so.method = *parse_method(opt->method);
    so.goal = opt->objective == "time" ? objective::time : objective::memory;
    so.every_k = opt->k;
    so.order = *parse_order_choice(opt->order);
    so.max_lower_sets = opt->max_lower_sets;
    so.time_limit = to_milliseconds(opt->time_limit);
    so.work_limit = static_cast<std::uint64_t>(opt->work_limit);
    so.bound_time_limit = to_milliseconds(opt->bound_time);
    so.general_search_work = static_cast<std::uint64_t>(opt->general_work);
    if (opt->max_recompute > 0) so.general_max_recompute = opt->max_recompute;
    progress_line progress;
    if (!opt->quiet && progress_line::wanted()) so.progress = std::ref(progress);
    if (!opt->budget.empty()) {
      const auto budget = parse_bytes(opt->budget);
      if (!budget) throw error("--budget: '" + opt->budget + "' is not a byte size (try 3GiB, 1.5GB or 4096)");
      so.budget = *budget;
    } else if (so.goal == objective::time) {
      throw error("--objective time needs --budget");
    }
    if (!opt->max_memory.empty()) {
      const auto bytes = parse_bytes(opt->max_memory);
      if (!bytes || *bytes == 0)
        throw error("--max-memory: '" + opt->max_memory + "' is not a positive byte size (try 2GiB, 500MB)");
      so.max_memory = *bytes;
    }
    const solution s = solve(g, so);
    progress.clear();
    const simulation regular = simulate(g, plan_none(g).steps);
    report out;
    out.row("graph", fmt::format("{} ({} nodes)", g.name(), g.size()), g.name());
    // "optimal" is only ever said with the plans it covers.
    const std::string& family = s.proof_family;
    out.row("status",
            std::string(to_string(s.status)) + (s.status == solve_status::optimal ? " over " + family : "") +
                (s.message.empty() ? "" : "  (" + s.message + ")"),
            std::string(to_string(s.status)));
    if (!family.empty()) out.hidden("proof_family", family);
    // Why the plan is not proven, for programs (the status row says it in words).
    if (s.unproven() != unproven_reason::none) out.hidden("unproven", std::string(to_string(s.unproven())));
    if (s.status == solve_status::infeasible || s.status == solve_status::stopped) {
      if (s.smallest_feasible_budget) out.hidden("smallest_feasible_budget", s.smallest_feasible_budget);
      out.print(opt->json);
      throw error(s.message.empty() ? "no plan meets the budget" : s.message);
    }
    add_figures(out, g, s.best, s.figures, regular);
    const std::string order = order_name(g, s.best.order);
    const std::string order_words = order == "graph"             ? "the file's node order"
                                    : order == "consumers-first" ? "a value's readers run right after it"
                                    : order == "last-written-first"
                                        ? "of the nodes ready, the one the file lists last runs first"
                                    : order == "fewest-gradients"
                                        ? "backward first where it adds the fewest gradient bytes"
                                    : order == "consumers-first over fewest-gradients"
                                        ? "a value's readers right after it, from the fewest-gradients order"
                                        : "a topological order of the plan's own";
    out.row("order", order + " (" + order_words + ")", order);
    if (so.goal == objective::memory && s.peak_lower_bound > 0) {
      const double gap = static_cast<double>(s.figures.peak_bytes) / static_cast<double>(s.peak_lower_bound) - 1.0;
      // A bound above the per-op floor comes from a search over the method's
      // family and holds for that family alone (general plans can go below
      // it), or is the cut floor, which holds for every schedule.
      const std::uint64_t floor = per_op_floor(g).bytes;
      const bool family_only = s.peak_lower_bound > floor && !family.empty() && !family.starts_with("every schedule");
      out.row("lower bound",
              fmt::format("{}  (gap {}{})", bytes_with_exact(s.peak_lower_bound), percent(gap),
                          family_only ? fmt::format("; for {}; for every plan, the per-op floor {}", family,
                                                    format_bytes(floor))
                                      : std::string()),
              s.peak_lower_bound);
      out.hidden("lower_bound_holds_for", family_only ? family : std::string("every plan"));
    }
    if (s.objective > 0)
      out.row("objective", fmt::format("{}  (Feng & Huang: kept + largest segment)",
                                       bytes_with_exact(static_cast<std::uint64_t>(s.objective))),
              s.objective);
    out.row("search (" + s.produced_by + ")", search_summary(s.stats), search_json(s.stats), "search");
    out.hidden("produced_by", s.produced_by);
    if (!opt->output.empty()) {
      outputs.set(opt->output, io::write_plan_json(g, s.best, s.figures));
      out.row("plan written", opt->output, opt->output);
    }
    if (!opt->dot.empty()) {
      outputs.set(opt->dot, io::write_dot(g, s.best.steps));
      out.row("dot written", opt->dot, opt->dot);
    }
    outputs.commit();
    out.print(opt->json);
  });
}

}  // namespace remat::cli
