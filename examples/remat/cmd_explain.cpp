// remat explain FILE: what checkpointing can and cannot save, in bytes and in
// pictures, for regular training, the user's checkpoints and the optimal plan.

#include <chrono>

#include <remat/io/plan_json.hpp>
#include <remat/report/explain.hpp>

#include "cli.hpp"
#include "explain_svg.hpp"
#include "svg.hpp"

namespace remat::cli {

namespace {

struct column {
  std::string title;
  const plan_memory* memory;
};

std::string signed_bytes(std::int64_t bytes) {
  return bytes < 0 ? "-" + format_bytes(static_cast<std::uint64_t>(-bytes)) : format_bytes(static_cast<std::uint64_t>(bytes));
}

double share(std::uint64_t part, std::uint64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string step_words(const graph& g, const schedule& steps, std::size_t i) {
  return fmt::format("{} of '{}'", to_string(steps[i].kind), g.node_name(steps[i].node));
}

std::string tensor_words(const graph& g, const live_tensor& t) {
  return fmt::format("{} of '{}'", to_string(t.role), g.node_name(t.node));
}

std::string lifetime_words(const graph& g, const schedule& steps, const live_tensor& t) {
  if (t.resident) return "resident";
  if (t.first_step == t.last_step) return fmt::format("step {} only ({})", t.first_step, step_words(g, steps, t.first_step));
  if (t.last_step + 1 == steps.size() && t.role == tensor_role::parameter_gradient)
    return fmt::format("from step {} ({}) to the end", t.first_step, step_words(g, steps, t.first_step));
  return fmt::format("steps {}-{} ({} to {})", t.first_step, t.last_step, step_words(g, steps, t.first_step),
                     step_words(g, steps, t.last_step));
}

// The verdict, in sentences, from the explanation's figures.
std::vector<std::string> verdict(const graph& g, const explanation& e, const std::string& chosen_title) {
  std::vector<std::string> out;
  const training_memory peak = e.regular.peak();
  const std::uint64_t total = peak.total();
  const std::uint64_t values = peak[memory_part::activations] + peak[memory_part::recomputed];
  // The highest of the floors bounds what any plan saves.
  const std::string floor_at =
      e.search_floor > 0 ? e.search_floor_name
      : e.order.bytes > 0 ? "the backward-order floor (" + describe_order_floor(g, e.order) + ")"
      : e.cut.bytes > e.floor.bytes ? "the cut floor (" + describe_cut_floor(g, e.cut) + ")"
                                    : "the per-op floor (" + describe_floor(g, e.floor) + ")";
  if (e.most_any_plan_saves() == 0)
    out.push_back(fmt::format("Activations are {} of the peak ({} of {}): checkpointing can save nothing, because "
                              "regular training already peaks at {}.",
                              percent(e.activation_share()), format_bytes(values), format_bytes(total), floor_at));
  else
    out.push_back(fmt::format("Activations are {} of the peak ({} of {}): checkpointing can save at most {} ({}), "
                              "down to {}.",
                              percent(e.activation_share()), format_bytes(values), format_bytes(total),
                              format_bytes(e.most_any_plan_saves()), percent(share(e.most_any_plan_saves(), total)),
                              floor_at));
  std::uint64_t fixed = 0;
  for (memory_part p : memory_parts) fixed += plan_dependent(p) ? 0 : peak[p];
  const memory_part largest = peak.largest();
  out.push_back(fmt::format("The largest part of the peak is {} ({}, {}); {} of it ({}) is parameters, their "
                            "gradients, optimizer state and inputs, which checkpointing does not touch.",
                            to_string(largest), format_bytes(peak[largest]), percent(share(peak[largest], total)),
                            percent(share(fixed, total)), format_bytes(fixed)));
  if (e.chosen) {
    const std::int64_t saved = e.saving(*e.chosen);
    const fate_summary mine = summarize_fates(g, e.chosen->p.steps), regular = summarize_fates(g, e.regular.p.steps);
    const simulation& sim = e.chosen->figures;
    const std::string cost =
        sim.recompute_steps == 0
            ? std::string("recompute nothing")
            : fmt::format("take {} recompute steps ({:.3g} s, {} of forward + backward)", sim.recompute_steps, sim.recompute_time,
                          percent(sim.overhead()));
    if (saved > 0)
      out.push_back(fmt::format("{} save {} ({}) and {}.", chosen_title, format_bytes(static_cast<std::uint64_t>(saved)),
                                percent(share(static_cast<std::uint64_t>(saved), total)), cost));
    else if (saved == 0)
      out.push_back(fmt::format("{} save nothing: the peak stays at {}; they {}.", chosen_title,
                                format_bytes(e.chosen->peak_bytes()), cost));
    else
      out.push_back(fmt::format("{} need {} more than regular training: they keep {} values ({}) where regular "
                                "training keeps {} ({}), and they {}.",
                                chosen_title, format_bytes(static_cast<std::uint64_t>(-saved)), mine.kept,
                                format_bytes(mine.kept_bytes), regular.kept, format_bytes(regular.kept_bytes), cost));
  }
  if (e.optimal_is_regular()) {
    out.push_back("The optimal plan is regular training itself: no plan found peaks lower or recomputes less.");
  } else {
    const simulation& sim = e.optimal.figures;
    const std::int64_t saved = e.saving(e.optimal);
    out.push_back(fmt::format("The {} saves {} ({}) with {} recompute steps ({:.3g} s, {} of forward + backward).",
                              e.optimal_status == solve_status::optimal ? "optimal plan" : "best plan found (not proven optimal)",
                              signed_bytes(saved), percent(share(saved > 0 ? static_cast<std::uint64_t>(saved) : 0, total)),
                              sim.recompute_steps, sim.recompute_time, percent(sim.overhead())));
  }
  if (e.budget) {
    const std::string budget = format_bytes(*e.budget);
    if (e.fits(e.regular))
      out.push_back(fmt::format("Regular training fits the budget of {} with {} to spare.", budget,
                                format_bytes(*e.budget - e.regular.peak_bytes())));
    else if (e.fits(e.optimal))
      out.push_back(fmt::format("Regular training does not fit {}; the {} does, with {} to spare.", budget,
                                e.optimal_status == solve_status::optimal ? "optimal plan" : "best plan found",
                                format_bytes(*e.budget - e.optimal.peak_bytes())));
    else if (e.budget_below_floor())
      out.push_back(fmt::format("No plan fits {}: the per-op floor is {}, and parameters, their gradients and "
                                "optimizer state alone take {}.",
                                budget, format_bytes(e.floor_bytes()),
                                format_bytes(g.param_bytes() * (2 + state_buffers(e.optimizer)))));
    else if (e.plan_bound > *e.budget)
      out.push_back(fmt::format("remat found no plan within {}: regular training needs {}; among {}{}, none needs less "
                                "than {} ({}); the per-op floor, {}, does not rule out plans of other kinds.",
                                budget, format_bytes(e.regular.peak_bytes()), e.bound_family,
                                e.bound_both_orders ? " in either execution order" : "", format_bytes(e.plan_bound),
                                e.optimal_status == solve_status::optimal
                                    ? "the optimal plan's peak"
                                    : "a lower bound from the exact optimum of a subgraph",
                                format_bytes(e.floor_bytes())));
    else
      out.push_back(fmt::format("remat found no plan within {}: the least it found needs {} (the lower bound{}, {}, "
                                "does not rule one out).",
                                budget, format_bytes(e.optimal.peak_bytes()),
                                e.bound_family == "every plan" ? "" : " for " + e.bound_family, format_bytes(e.plan_bound)));
  }
  return out;
}

nlohmann::json plan_json(const graph& g, const explanation& e, const plan_memory& m, std::size_t top) {
  const training_memory peak = m.peak();
  nlohmann::json at_peak = nlohmann::json::object();
  for (memory_part p : memory_parts) at_peak[std::string(to_string(p))] = peak[p];
  nlohmann::json largest = nlohmann::json::array();
  for (std::size_t i = 0; i < std::min(top, m.at_peak.size()); ++i) {
    const live_tensor& t = m.at_peak[i];
    nlohmann::json entry = {{"role", to_string(t.role)}, {"node", g.node_name(t.node)}, {"bytes", t.bytes},
                            {"resident", t.resident}};
    if (!t.resident) entry["steps"] = {t.first_step, t.last_step};
    largest.push_back(std::move(entry));
  }
  const fate_summary fates = summarize_fates(g, m.p.steps);
  return {{"method", m.p.method},
          {"peak", m.peak_bytes()},
          {"saves", e.saving(m)},
          {"peak_step", m.figures.peak_step},
          {"peak_in", m.p.steps.empty() ? std::string() : step_words(g, m.p.steps, m.figures.peak_step)},
          {"at_peak", std::move(at_peak)},
          {"recompute_time", m.figures.recompute_time},
          {"overhead", m.figures.overhead()},
          {"kept", fates.kept},
          {"recomputed", fates.recomputed},
          {"largest", std::move(largest)}};
}

// Rows of figures, one column per plan, right-aligned.
void print_table(const graph& g, const explanation& e, const std::vector<column>& columns) {
  std::vector<std::vector<std::string>> rows;
  auto row = [&](std::string label, auto&& cell) {
    std::vector<std::string> r{std::move(label)};
    for (const column& c : columns) r.push_back(cell(*c.memory));
    rows.push_back(std::move(r));
  };
  std::vector<std::string> header{""};
  for (const column& c : columns) header.push_back(c.title);
  rows.push_back(std::move(header));
  auto part = [&](memory_part p) { return [p](const plan_memory& m) { return format_bytes(m.peak()[p]); }; };
  for (memory_part p : {memory_part::parameters, memory_part::optimizer_state, memory_part::parameter_gradients,
                        memory_part::inputs, memory_part::activations})
    row(std::string(to_string(p)), part(p));
  row("transient", [](const plan_memory& m) {
    const training_memory peak = m.peak();
    return format_bytes(peak[memory_part::recomputed] + peak[memory_part::gradients] + peak[memory_part::workspace]);
  });
  for (memory_part p : {memory_part::recomputed, memory_part::gradients, memory_part::workspace})
    row("  " + std::string(to_string(p)), part(p));
  row("peak", [](const plan_memory& m) { return format_bytes(m.peak_bytes()); });
  row("  bytes", [](const plan_memory& m) { return fmt::format("{}", m.peak_bytes()); });
  row("  saves", [&](const plan_memory& m) { return &m == &e.regular ? std::string("-") : signed_bytes(e.saving(m)); });
  row("  at step", [](const plan_memory& m) { return fmt::format("{}", m.figures.peak_step); });
  row("  in", [&](const plan_memory& m) {
    return m.p.steps.empty() ? std::string("-") : step_words(g, m.p.steps, m.figures.peak_step);
  });
  row("recompute", [](const plan_memory& m) {
    return fmt::format("{:.3g} s ({})", m.figures.recompute_time, percent(m.figures.overhead()));
  });
  row("values kept", [&](const plan_memory& m) {
    const fate_summary c = summarize_fates(g, m.p.steps);
    return fmt::format("{} ({})", c.kept, format_bytes(c.kept_bytes));
  });
  row("values recomputed", [&](const plan_memory& m) { return fmt::format("{}", summarize_fates(g, m.p.steps).recomputed); });

  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (const auto& r : rows) {
    std::string line = fmt::format("{:<{}}", r[0], width[0]);
    for (std::size_t i = 1; i < r.size(); ++i) line += fmt::format("  {:>{}}", r[i], width[i]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  }
}

// The few tensors that make a plan's peak, and when they live.
void print_largest(const graph& g, const std::string& title, const plan_memory& m, std::size_t top) {
  if (m.p.steps.empty() || top == 0) return;
  fmt::print("\nlargest at the peak of {} (step {}, {}):\n", title, m.figures.peak_step,
             step_words(g, m.p.steps, m.figures.peak_step));
  const std::size_t shown = std::min(top, m.at_peak.size());
  std::size_t name_width = 0;
  for (std::size_t i = 0; i < shown; ++i) name_width = std::max(name_width, tensor_words(g, m.at_peak[i]).size());
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < shown; ++i) {
    const live_tensor& t = m.at_peak[i];
    sum += t.bytes;
    fmt::print("  {:>10}  {:>5}  {:<{}}  {}\n", format_bytes(t.bytes), percent(share(t.bytes, m.peak_bytes())),
               tensor_words(g, t), name_width, lifetime_words(g, m.p.steps, t));
  }
  fmt::print("  these {}: {} of the peak ({} tensors alive)\n", shown, percent(share(sum, m.peak_bytes())), m.at_peak.size());
}

}  // namespace

void add_explain_command(CLI::App& app) {
  struct options {
    std::string file, plan_file, optimizer = "sgd", budget, graph_svg, timeline_svg, pareto_svg;
    std::vector<std::string> keep;
    std::size_t top = 6;
    double time_limit = 60;
    double general_work = static_cast<double>(explain_options{}.general_search_work);
    double max_recompute = 0;
    bool json = false;
  };
  auto opt = std::make_shared<options>();
  auto* cmd = app.add_subcommand(
      "explain", "What checkpointing can and cannot save: training memory by part for regular training, your "
                 "checkpoints and the optimal plan; the per-op floor; the tensors that make the peak; pictures");
  cmd->add_option("FILE", opt->file, "graph file (remat JSON or Kusumoto IR)")->required();
  auto* keep = cmd->add_option("--keep", opt->keep,
                               "your checkpoints: node names whose values stay alive into the backward, comma-separated; "
                               "every other value a backward reads is recomputed from them (docs/explain.md)")
                   ->delimiter(',');
  cmd->add_option("--plan", opt->plan_file, "your plan as a plan file (steps, kept or stages)")->excludes(keep);
  cmd->add_option("--optimizer", opt->optimizer, "sgd (no state) | momentum (1 buffer per parameter) | adam (2)")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}))
      ->capture_default_str();
  cmd->add_option("--budget", opt->budget,
                  "memory to fit, optimizer state included, e.g. 8GiB: the optimal plan is then the least recompute "
                  "within it");
  cmd->add_option("--top", opt->top, "how many of the largest tensors at each peak to list")
      ->check(whole_number(0))->capture_default_str();
  cmd->add_option("--graph-svg", opt->graph_svg, "draw the graph under your plan (or regular training) and the optimal plan");
  cmd->add_option("--timeline-svg", opt->timeline_svg, "draw the memory of every step, stacked by part, for each plan");
  cmd->add_option("--pareto-svg", opt->pareto_svg, "draw the frontier of peak memory against recompute time");
  cmd->add_option("--time-limit", opt->time_limit, "seconds for each search (the plan, the frontier)")
      ->check(seconds_check(false))
      ->capture_default_str();
  add_general_plan_options(cmd, opt->general_work, opt->max_recompute);
  cmd->add_flag("--json", opt->json, "print JSON instead of a table");
  cmd->callback([opt] {
    output_files outputs;
    std::vector<std::string> inputs{opt->file};
    if (!opt->plan_file.empty()) inputs.push_back(opt->plan_file);
    outputs.reserve("--graph-svg", opt->graph_svg, inputs);
    outputs.reserve("--timeline-svg", opt->timeline_svg, inputs);
    outputs.reserve("--pareto-svg", opt->pareto_svg, inputs);
    const graph g = io::load_graph(opt->file);
    explain_options eo;
    eo.optimizer = *parse_optimizer(opt->optimizer);
    eo.time_limit = to_milliseconds(opt->time_limit);
    eo.general_search_work = static_cast<std::uint64_t>(opt->general_work);
    if (opt->max_recompute > 0) eo.general_max_recompute = opt->max_recompute;
    if (!opt->budget.empty()) {
      const auto budget = parse_bytes(opt->budget);
      if (!budget) throw error("--budget: '" + opt->budget + "' is not a byte size (try 8GiB, 1.5GB or 4096)");
      eo.budget = *budget;
    }
    std::optional<plan> chosen;
    std::string chosen_title = "your plan";
    if (!opt->keep.empty()) {
      try {
        chosen = plan_from_checkpoints(g, opt->keep);
      } catch (const error& e) {
        throw error(std::string("--keep: ") + e.what());
      }
      chosen_title = "your checkpoints";
    } else if (!opt->plan_file.empty()) {
      chosen = io::read_plan_json(io::read_text_file(opt->plan_file), g, opt->plan_file);
      try {
        (void)simulate(g, chosen->steps);
      } catch (const invalid_schedule& e) {
        throw error(opt->plan_file + ": " + e.what());
      }
    }
    const explanation e = explain(g, std::move(chosen), eo);

    const std::string optimal_title = e.optimal_status == solve_status::optimal ? "optimal plan" : "best plan found";
    std::vector<column> columns{{"regular training", &e.regular}};
    if (e.chosen) columns.push_back({chosen_title, &*e.chosen});
    columns.push_back({optimal_title, &e.optimal});
    const std::vector<std::string> sentences = verdict(g, e, chosen_title == "your plan" ? "Your plan" : "Your checkpoints");
    const std::string optimizer_words =
        fmt::format("{} ({} state buffer{} per parameter: {})", to_string(e.optimizer), state_buffers(e.optimizer),
                    state_buffers(e.optimizer) == 1 ? "" : "s", format_bytes(e.optimizer_state));
    // "optimal" is only ever said with the plans it covers.
    const std::string optimal_words =
        std::string(to_string(e.optimal_status)) +
        (e.optimal_status == solve_status::optimal && !e.optimal_family.empty() ? " over " + e.optimal_family : "") +
        (e.optimal_message.empty() ? "" : " (" + e.optimal_message + ")");

    if (!opt->graph_svg.empty()) {
      std::vector<svg::plan_panel> panels{{e.chosen ? chosen_title : "regular training", e.chosen ? &*e.chosen : &e.regular},
                                          {optimal_title, &e.optimal}};
      outputs.set(opt->graph_svg, svg::plan_graph(g.name() + ": the graph under each plan", g, panels));
    }
    if (!opt->timeline_svg.empty()) {
      std::vector<svg::plan_panel> panels;
      for (const column& c : columns) panels.push_back({c.title, c.memory});
      outputs.set(opt->timeline_svg, svg::memory_timeline(g.name() + ": memory through one training step", g, panels,
                                                         e.floor_bytes(), e.budget));
    }
    std::optional<explained_frontier> frontier;
    if (!opt->pareto_svg.empty()) {
      frontier = simulated_frontier(g, e, eo.time_limit);
      const svg::byte_unit unit = svg::unit_for(e.regular.peak_bytes());
      auto x = [&](std::uint64_t bytes) { return static_cast<double>(bytes) / unit.divisor; };
      svg::series line{frontier->status == solve_status::optimal ? "stage-plan frontier (exact)"
                                                                 : "stage-plan frontier (sampled: each point optimal for its budget)",
                       "#1f77b4", {}, true, true};
      for (const tradeoff& t : frontier->points) line.points.emplace_back(x(t.peak_bytes), 100.0 * t.overhead);
      std::vector<svg::mark> marks{{x(e.regular.peak_bytes()), 0.0, "regular training", "#d62728"}};
      if (e.chosen)
        marks.push_back({x(e.chosen->peak_bytes()), 100.0 * e.chosen->figures.overhead(), chosen_title, "#9467bd"});
      marks.push_back({x(e.optimal.peak_bytes()), 100.0 * e.optimal.figures.overhead(), optimal_title, "#2ca02c"});
      std::vector<svg::guide> guides{{x(e.floor_bytes()), "per-op floor", "#333333"}};
      if (e.budget) guides.push_back({x(*e.budget), "budget", "#d62728"});
      outputs.set(opt->pareto_svg, svg::chart(g.name() + ": peak memory against recompute", "training memory at the peak (" + unit.name + ")",
                                             "recompute (% of forward + backward)", {line}, marks, guides));
    }
    outputs.commit();

    if (opt->json) {
      nlohmann::json doc;
      doc["graph"] = g.name();
      doc["nodes"] = g.size();
      doc["optimizer"] = to_string(e.optimizer);
      doc["optimizer_state"] = e.optimizer_state;
      doc["parameters"] = g.param_bytes();
      doc["per_op_floor"] = {{"bytes", e.floor_bytes()},
                             {"node", g.node_name(e.floor.node)},
                             {"backward", e.floor.backward},
                             {"pending_gradients", e.floor.pending_gradients}};
      if (e.cut.bytes > e.floor.bytes)
        doc["cut_floor"] = {{"bytes", e.cut.bytes + e.optimizer_state},
                            {"node", g.node_name(e.cut.node)},
                            {"after", e.cut.after ? nlohmann::json(g.node_name(*e.cut.after)) : nlohmann::json()}};
      if (e.order.bytes > 0)
        doc["order_floor"] = {{"bytes", e.order.bytes + e.optimizer_state},
                              {"node", e.order.complete ? nlohmann::json(g.node_name(e.order.node)) : nlohmann::json()}};
      if (e.search_floor > 0)
        doc["search_floor"] = {{"bytes", e.search_floor + e.optimizer_state}, {"name", e.search_floor_name}};
      doc["most_any_plan_saves"] = e.most_any_plan_saves();
      doc["activation_share"] = e.activation_share();
      doc["regular"] = plan_json(g, e, e.regular, opt->top);
      if (e.chosen) doc["chosen"] = plan_json(g, e, *e.chosen, opt->top);
      doc["optimal"] = plan_json(g, e, e.optimal, opt->top);
      doc["optimal"]["status"] = to_string(e.optimal_status);
      if (!e.optimal_family.empty()) doc["optimal"]["proof_family"] = e.optimal_family;
      doc["optimal"]["message"] = e.optimal_message;
      doc["optimal"]["is_regular"] = e.optimal_is_regular();
      if (e.budget) doc["budget"] = *e.budget;
      if (frontier) {
        doc["frontier"] = nlohmann::json::array();
        for (const tradeoff& t : frontier->points)
          doc["frontier"].push_back({{"peak", t.peak_bytes}, {"recompute_time", t.recompute_time}, {"overhead", t.overhead}});
      }
      doc["verdict"] = sentences;
      fmt::print("{}\n", doc.dump(2));
      return;
    }
    report head;
    head.row("graph", fmt::format("{} ({} nodes, {})", g.name(), g.size(), opt->file), g.name());
    head.row("optimizer", optimizer_words, to_string(e.optimizer));
    head.row("plan search", optimal_words, optimal_words);
    head.print(false);
    fmt::print("\n");
    print_table(g, e, columns);
    fmt::print("\nper-op floor  {}  ({}; no plan goes below)\n", bytes_with_exact(e.floor_bytes()),
               describe_floor(g, e.floor));
    if (e.cut.bytes > e.floor.bytes)
      fmt::print("cut floor     {}  ({}; no plan goes below)\n", bytes_with_exact(e.cut.bytes + e.optimizer_state),
                 describe_cut_floor(g, e.cut));
    if (e.order.bytes > 0)
      fmt::print("order floor   {}  (the backward-order floor: {}; no plan goes below)\n",
                 bytes_with_exact(e.order.bytes + e.optimizer_state), describe_order_floor(g, e.order));
    if (e.search_floor > 0)
      fmt::print("search floor  {}  ({}, found by the plan search; no plan goes below)\n",
                 bytes_with_exact(e.search_floor + e.optimizer_state), e.search_floor_name);
    print_largest(g, "regular training", e.regular, opt->top);
    if (e.chosen && e.chosen->p.steps != e.regular.p.steps) print_largest(g, chosen_title, *e.chosen, opt->top);
    if (!e.optimal_is_regular()) print_largest(g, "the " + optimal_title, e.optimal, opt->top);
    fmt::print("\nverdict\n");
    for (const std::string& s : sentences) fmt::print("  {}\n", s);
    for (const auto& [what, path] : {std::pair{"graph picture", opt->graph_svg}, std::pair{"timeline picture", opt->timeline_svg},
                                     std::pair{"frontier picture", opt->pareto_svg}})
      if (!path.empty()) fmt::print("{} written to {}\n", what, path);
  });
}

}  // namespace remat::cli
