// remat._core: the header-only core as a Python module. Graphs, solve with
// every option solve_options has, simulate, and the results as plain Python
// objects; remat::error and its kinds arrive as remat.Error and subclasses
// carrying the core's message.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <remat/io/json.hpp>
#include <remat/io/load.hpp>
#include <remat/io/plan_json.hpp>
#include <remat/remat.hpp>

namespace py = pybind11;
using namespace remat;

namespace {

// Names in the core's own words ("exact", "consumers-first", ...): one
// vocabulary for the CLI, the JSON files and Python.
template <class T>
T parse_name(std::string_view what, const std::string& name, std::optional<T> (*parse)(std::string_view),
             const char* choices) {
  if (auto v = parse(name)) return *v;
  throw py::value_error("unknown " + std::string(what) + " '" + name + "' (one of " + choices + ")");
}

std::optional<objective> parse_objective(std::string_view s) noexcept {
  if (s == "memory") return objective::memory;
  if (s == "time") return objective::time;
  return std::nullopt;
}

// A non-negative whole number (of bytes, say) from a Python int (a float or a
// negative number is a mistake worth naming, not a value to round).
std::uint64_t to_bytes(const char* field, const py::handle& value, const char* unit = "bytes") {
  if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value))
    throw py::type_error(std::string(field) + " must be an int (" + unit + "), got " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  const py::int_ i = py::reinterpret_borrow<py::int_>(value);
  if (i < py::int_(0)) throw py::value_error(std::string(field) + " must not be negative, got " + std::string(py::repr(i)));
  if (i > py::int_(std::numeric_limits<std::uint64_t>::max()))
    throw py::value_error(std::string(field) + " does not fit in 64 bits: " + std::string(py::repr(i)));
  return i.cast<std::uint64_t>();
}

std::chrono::milliseconds to_milliseconds(const char* field, double seconds, double at_most) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > at_most)
    throw py::value_error(std::string(field) + " must be a number of seconds in [0, " + std::to_string(at_most) +
                          "], got " + std::to_string(seconds));
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000)));
}

// One node from a dict: name, op, inputs (names or indices of earlier or
// later nodes), bytes, and optionally time, params, workspace,
// backward_workspace, backward_time, reads.
struct pending_node {
  node_spec spec;
  std::vector<py::object> inputs;
};

pending_node node_from_dict(const py::dict& d, std::size_t index) {
  static const char* const known[] = {"name", "op", "inputs", "bytes", "time", "params", "workspace",
                                      "backward_workspace", "backward_time", "reads"};
  const std::string where = "node " + std::to_string(index);
  for (const auto& [key, value] : d) {
    const std::string k = py::str(key);
    bool ok = false;
    for (const char* name : known) ok = ok || k == name;
    if (!ok) throw py::value_error(where + ": unknown field '" + k + "'");
  }
  pending_node n;
  if (d.contains("name")) n.spec.name = py::str(d["name"]);
  n.spec.op = d.contains("op") ? std::string(py::str(d["op"])) : "op";
  if (!d.contains("bytes")) throw py::value_error(where + " ('" + n.spec.name + "'): 'bytes' is required");
  const std::string label = where + (n.spec.name.empty() ? "" : " ('" + n.spec.name + "')");
  n.spec.bytes = to_bytes((label + " bytes").c_str(), d["bytes"]);
  if (d.contains("time")) n.spec.time = d["time"].cast<double>();
  if (d.contains("params")) n.spec.params = to_bytes((label + " params").c_str(), d["params"]);
  if (d.contains("workspace")) n.spec.workspace = to_bytes((label + " workspace").c_str(), d["workspace"]);
  if (d.contains("backward_workspace"))
    n.spec.backward_workspace = to_bytes((label + " backward_workspace").c_str(), d["backward_workspace"]);
  if (d.contains("backward_time")) n.spec.backward_time = d["backward_time"].cast<double>();
  if (d.contains("reads"))
    n.spec.reads = parse_name<backward_reads>(label + " reads", py::str(d["reads"]), parse_backward_reads,
                                              "none, inputs, output, both");
  if (d.contains("inputs"))
    for (const py::handle& x : d["inputs"]) n.inputs.push_back(py::reinterpret_borrow<py::object>(x));
  return n;
}

graph graph_from_dicts(const py::iterable& nodes, const std::string& name) {
  std::vector<pending_node> pending;
  for (const py::handle& item : nodes) {
    if (!py::isinstance<py::dict>(item))
      throw py::type_error("node " + std::to_string(pending.size()) + " must be a dict, got " +
                           std::string(py::str(py::type::of(item).attr("__name__"))));
    pending.push_back(node_from_dict(py::reinterpret_borrow<py::dict>(item), pending.size()));
  }
  std::map<std::string, std::size_t, std::less<>> index_of;
  for (std::size_t i = 0; i < pending.size(); ++i)
    if (!pending[i].spec.name.empty()) index_of.emplace(pending[i].spec.name, i);
  graph_builder builder(name);
  for (std::size_t i = 0; i < pending.size(); ++i) {
    pending_node& n = pending[i];
    for (const py::object& x : n.inputs) {
      if (py::isinstance<py::str>(x)) {
        const std::string operand = py::str(x);
        auto it = index_of.find(operand);
        if (it == index_of.end())
          throw invalid_graph("node '" + (n.spec.name.empty() ? "n" + std::to_string(i) : n.spec.name) +
                                  "' reads '" + operand + "', which is no node's name",
                              n.spec.name);
        n.spec.inputs.push_back(it->second);
      } else {
        const std::uint64_t k = to_bytes(("node " + std::to_string(i) + " input").c_str(), x);
        n.spec.inputs.push_back(static_cast<std::size_t>(k));
      }
    }
    builder.add(std::move(n.spec));
  }
  return std::move(builder).build();
}

py::list names_of(const graph& g, const node_set& s) {
  py::list out;
  for (std::size_t v = 0; v < g.size(); ++v)
    if (s.contains(static_cast<node_id>(v))) out.append(g.node_name(v));
  return out;
}

py::dict breakdown_dict(const memory_breakdown& m) {
  py::dict d;
  d["parameters"] = m.parameters;
  d["inputs"] = m.inputs;
  d["activations"] = m.activations;
  d["recomputed"] = m.recomputed;
  d["gradients"] = m.gradients;
  d["parameter_gradients"] = m.parameter_gradients;
  d["workspace"] = m.workspace;
  d["total"] = m.total();
  return d;
}

schedule schedule_from_python(const graph& g, const py::iterable& steps) {
  schedule out;
  for (const py::handle& item : steps) {
    const auto pair = item.cast<py::tuple>();
    if (pair.size() != 2) throw py::value_error("step " + std::to_string(out.size()) + " must be (kind, node)");
    const std::string kind = py::str(pair[0]);
    step s{};
    if (kind == "compute") s.kind = step_kind::compute;
    else if (kind == "recompute") s.kind = step_kind::recompute;
    else if (kind == "free") s.kind = step_kind::free;
    else if (kind == "backward") s.kind = step_kind::backward;
    else throw py::value_error("step " + std::to_string(out.size()) + ": unknown kind '" + kind +
                               "' (one of compute, recompute, free, backward)");
    if (py::isinstance<py::str>(pair[1])) {
      const std::string name = py::str(pair[1]);
      auto v = g.find(name);
      if (!v) throw py::value_error("step " + std::to_string(out.size()) + ": no node named '" + name + "'");
      s.node = *v;
    } else {
      const std::uint64_t v = to_bytes(("step " + std::to_string(out.size()) + " node").c_str(), pair[1]);
      if (v >= g.size())
        throw py::value_error("step " + std::to_string(out.size()) + ": node " + std::to_string(v) +
                              " is not below the graph's " + std::to_string(g.size()) + " nodes");
      s.node = static_cast<node_id>(v);
    }
    out.push_back(s);
  }
  return out;
}

py::list schedule_to_python(const graph& g, const schedule& steps) {
  py::list out;
  for (const step& s : steps) out.append(py::make_tuple(std::string(to_string(s.kind)), g.node_name(s.node)));
  return out;
}

}  // namespace

// The simulator's figures; `timeline` holds each step's memory when asked for.
struct py_simulation {
  simulation figures;
  py::dict at_peak() const { return breakdown_dict(figures.at_peak); }
  py::list timeline() const {
    py::list out;
    for (const memory_breakdown& m : figures.timeline) out.append(m.total());
    return out;
  }
};

struct py_solution {
  std::shared_ptr<const graph> g;
  solution s;
};

PYBIND11_MODULE(_core, m) {
  m.doc() = "remat's core: optimal gradient-checkpointing plans for computation graphs";
  m.attr("__version__") = REMAT_VERSION_STRING;

  // remat.Error and its kinds; the core's message is the exception's message.
  static py::exception<error> base(m, "Error", PyExc_RuntimeError);
  static py::exception<invalid_graph> bad_graph(m, "InvalidGraph", base.ptr());
  static py::exception<parse_error> bad_file(m, "ParseError", base.ptr());
  static py::exception<invalid_schedule> bad_schedule(m, "InvalidSchedule", base.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const invalid_graph& e) {
      // The node at fault rides on the exception as `.node` ('' when none).
      py::object value = py::reinterpret_borrow<py::object>(bad_graph.ptr())(e.what());
      py::setattr(value, "node", py::str(e.node()));
      PyErr_SetObject(bad_graph.ptr(), value.ptr());
    } catch (const parse_error& e) {
      bad_file(e.what());
    } catch (const invalid_schedule& e) {
      bad_schedule(e.what());
    } catch (const error& e) {
      base(e.what());
    }
  });

  py::class_<graph, std::shared_ptr<graph>>(m, "Graph",
                                             "A validated computation graph (nodes in topological order).")
      .def(py::init([](const py::iterable& nodes, const std::string& name) {
             return std::make_shared<graph>(graph_from_dicts(nodes, name));
           }),
           py::arg("nodes"), py::arg("name") = "",
           "Nodes as dicts: name, op ('input' for a resident input), inputs (names or indices), bytes, and "
           "optionally time (s), params, workspace, backward_workspace, backward_time, reads "
           "('none', 'inputs', 'output', 'both').")
      .def_static("from_json", [](const std::string& text, const std::string& source) {
        return std::make_shared<graph>(io::read_graph_json(text, source));
      }, py::arg("text"), py::arg("source") = "<string>", "A graph from remat's JSON format (docs/graph-format.md).")
      .def_static("load", [](const std::string& path) { return std::make_shared<graph>(io::load_graph(path)); },
                  py::arg("path"), "A graph from a remat JSON file or a Kusumoto IR file.")
      .def("to_json", [](const graph& g) { return io::write_graph_json(g); })
      .def(py::pickle([](const graph& g) { return io::write_graph_json(g); },
                      [](const std::string& text) { return std::make_shared<graph>(io::read_graph_json(text)); }))
      .def_property_readonly("name", &graph::name)
      .def("__len__", &graph::size)
      .def_property_readonly("num_edges", &graph::num_edges)
      .def_property_readonly("names", [](const graph& g) {
        std::vector<std::string> out;
        for (std::size_t v = 0; v < g.size(); ++v) out.push_back(g.node_name(v));
        return out;
      })
      .def("index", [](const graph& g, const std::string& name) {
        auto v = g.find(name);
        if (!v) throw py::key_error("no node named '" + name + "'");
        return static_cast<std::size_t>(*v);
      })
      .def("node", [](const graph& g, std::size_t v) {
        if (v >= g.size()) throw py::index_error("node " + std::to_string(v) + " of " + std::to_string(g.size()));
        py::dict d;
        d["name"] = g.node_name(v);
        d["op"] = g.op(v);
        py::list inputs;
        for (node_id p : g.inputs(v)) inputs.append(g.node_name(p));
        d["inputs"] = inputs;
        d["bytes"] = g.bytes(v);
        d["time"] = g.time(v);
        d["params"] = g.params(v);
        d["workspace"] = g.workspace(v);
        d["backward_workspace"] = g.backward_workspace(v);
        d["reads"] = std::string(to_string(g.reads(v)));
        return d;
      }, py::arg("index"))
      .def("__repr__", [](const graph& g) {
        return "<remat.Graph '" + g.name() + "': " + std::to_string(g.size()) + " nodes>";
      });

  py::class_<py_simulation>(m, "Simulation", "The simulator's figures for a schedule.")
      .def_property_readonly("peak_bytes", [](const py_simulation& s) { return s.figures.peak_bytes; })
      .def_property_readonly("peak_step", [](const py_simulation& s) { return s.figures.peak_step; })
      .def_property_readonly("at_peak", &py_simulation::at_peak)
      .def_property_readonly("forward_time", [](const py_simulation& s) { return s.figures.forward_time; })
      .def_property_readonly("recompute_time", [](const py_simulation& s) { return s.figures.recompute_time; })
      .def_property_readonly("backward_time", [](const py_simulation& s) { return s.figures.backward_time; })
      .def_property_readonly("recompute_steps", [](const py_simulation& s) { return s.figures.recompute_steps; })
      .def_property_readonly("total_time", [](const py_simulation& s) { return s.figures.total_time(); })
      .def_property_readonly("overhead", [](const py_simulation& s) { return s.figures.overhead(); })
      .def_property_readonly("timeline", &py_simulation::timeline)
      .def("__repr__", [](const py_simulation& s) {
        return "<remat.Simulation peak " + format_bytes(s.figures.peak_bytes) + ", recompute " +
               std::to_string(s.figures.recompute_time) + " s>";
      });

  py::class_<py_solution>(m, "Solution", "What solve returns: status, plan, figures, bounds.")
      .def_property_readonly("status", [](const py_solution& r) { return std::string(to_string(r.s.status)); })
      .def_property_readonly("method", [](const py_solution& r) { return r.s.best.method; })
      .def_property_readonly("peak", [](const py_solution& r) -> std::optional<std::uint64_t> {
        if (r.s.best.steps.empty()) return std::nullopt;
        return r.s.figures.peak_bytes;
      })
      .def_property_readonly("recompute_time", [](const py_solution& r) { return r.s.figures.recompute_time; })
      .def_property_readonly("peak_lower_bound", [](const py_solution& r) { return r.s.peak_lower_bound; })
      .def_property_readonly("peak_bound_name", [](const py_solution& r) { return r.s.peak_bound_name; },
                             "Which floor over every schedule peak_lower_bound is (empty: another bound).")
      .def_property_readonly("recompute_lower_bound", [](const py_solution& r) { return r.s.recompute_lower_bound; })
      .def_property_readonly("smallest_feasible_budget", [](const py_solution& r) -> std::optional<std::uint64_t> {
        if (r.s.smallest_feasible_budget == 0) return std::nullopt;
        return r.s.smallest_feasible_budget;
      })
      .def_property_readonly("known_feasible_budget", [](const py_solution& r) -> std::optional<std::uint64_t> {
        if (r.s.known_feasible_budget == 0) return std::nullopt;
        return r.s.known_feasible_budget;
      })
      .def_property_readonly("objective", [](const py_solution& r) { return r.s.objective; })
      .def_property_readonly("objective_lower_bound", [](const py_solution& r) { return r.s.objective_lower_bound; })
      .def_property_readonly("unproven", [](const py_solution& r) { return std::string(to_string(r.s.unproven())); })
      .def_property_readonly("message", [](const py_solution& r) { return r.s.message; })
      .def_property_readonly("seconds", [](const py_solution& r) { return r.s.stats.seconds; })
      .def_property_readonly("work", [](const py_solution& r) { return r.s.stats.work; },
                             "Work units the search charged (solve's work_limit).")
      .def_property_readonly("produced_by", [](const py_solution& r) { return r.s.produced_by; },
                             "The method whose search produced the plan (for exact: its portfolio's member).")
      .def_property_readonly("proof_family", [](const py_solution& r) { return r.s.proof_family; },
                             "The plans `optimal` speaks of (empty: the method proves nothing).")
      .def_property_readonly("kept", [](const py_solution& r) -> std::optional<py::list> {
        if (r.s.best.steps.empty() || (!r.s.best.stage_of.empty() && r.s.best.stage_modes.empty())) return std::nullopt;
        return names_of(*r.g, r.s.best.kept);
      }, "Names of the values the plan keeps through the forward (kept-set and general plans; None for stage plans).")
      .def_property_readonly("stage_of", [](const py_solution& r) { return r.s.best.stage_of; })
      .def_property_readonly("order", [](const py_solution& r) {
        std::vector<std::string> out;
        for (node_id v : r.s.best.order) out.push_back(r.g->node_name(v));
        return out;
      })
      .def_property_readonly("schedule", [](const py_solution& r) { return schedule_to_python(*r.g, r.s.best.steps); },
                             "The plan as (kind, node name) steps: compute, recompute, free, backward.")
      .def_property_readonly("figures", [](const py_solution& r) { return py_simulation{r.s.figures}; })
      .def("to_json", [](const py_solution& r) {
        if (r.s.best.steps.empty()) throw py::value_error("the solution holds no plan (status " +
                                                          std::string(to_string(r.s.status)) + ")");
        return io::write_plan_json(*r.g, r.s.best, r.s.figures);
      }, "The plan in remat's plan JSON (what `remat plan -o` writes).")
      .def("__repr__", [](const py_solution& r) {
        return "<remat.Solution " + std::string(to_string(r.s.status)) + " " + r.s.best.method +
               (r.s.best.steps.empty() ? std::string() : ", peak " + format_bytes(r.s.figures.peak_bytes)) + ">";
      });

  m.def(
      "solve",
      [](std::shared_ptr<graph> g, const std::string& method_name, const std::string& objective_name,
         const py::object& budget, const std::string& order, double time_limit, std::uint64_t max_lower_sets,
         std::size_t every_k, bool preserve_gradient_order, std::uint64_t max_segment_labels,
         double bound_time_limit, const py::object& max_memory, const py::object& work_limit,
         const py::object& general_work, const py::object& max_recompute) {
        solve_options o;
        o.method = parse_name<method>("method", method_name, parse_method,
                                      "exact, dp, chain, approx, mincut, ogc, ogc-exact, kept-search, general-search, sqrt, "
                                      "every-k, none");
        o.goal = parse_name<objective>("objective", objective_name, parse_objective, "memory, time");
        if (!budget.is_none()) o.budget = to_bytes("budget", budget);
        o.order = parse_name<order_choice>("order", order, parse_order_choice,
                                           "graph, consumers-first, best, auto");
        o.time_limit = to_milliseconds("time_limit", time_limit, 1e7);
        o.max_lower_sets = max_lower_sets;
        if (every_k == 0) throw py::value_error("every_k must be at least 1");
        o.every_k = every_k;
        o.preserve_gradient_order = preserve_gradient_order;
        o.max_segment_labels = max_segment_labels;
        o.bound_time_limit = to_milliseconds("bound_time_limit", bound_time_limit, 1e7);
        if (!max_memory.is_none()) o.max_memory = to_bytes("max_memory", max_memory);
        o.work_limit = work_limit.is_none() ? 0 : to_bytes("work_limit", work_limit, "work units");
        o.general_search_work = to_bytes("general_work", general_work, "work units");
        if (!max_recompute.is_none()) {
          const double passes = max_recompute.cast<double>();
          if (!(passes >= 0)) throw py::value_error("max_recompute must be a number of forward passes, 0 or more");
          o.general_max_recompute = passes;
        }
        py_solution r{g, {}};
        {
          py::gil_scoped_release unlocked;  // a long search leaves other Python threads running
          r.s = solve(*g, o);
        }
        return r;
      },
      py::arg("graph"), py::kw_only(), py::arg("method") = "exact", py::arg("objective") = "memory",
      py::arg("budget") = py::none(), py::arg("order") = "auto", py::arg("time_limit") = 60.0,
      py::arg("max_lower_sets") = solve_options{}.max_lower_sets, py::arg("every_k") = solve_options{}.every_k,
      py::arg("preserve_gradient_order") = true, py::arg("max_segment_labels") = solve_options{}.max_segment_labels,
      py::arg("bound_time_limit") = 0.25, py::arg("max_memory") = py::none(),
      py::arg("work_limit") = default_work_limit, py::arg("general_work") = solve_options{}.general_search_work,
      py::arg("max_recompute") = py::none(),
      "A checkpointing plan for `graph` (remat::solve). time_limit and bound_time_limit are seconds "
      "(0: none); budget and max_memory are bytes; work_limit is work units (None: none), which "
      "end a search at the same point on any machine, so the plan depends on the graph alone. "
      "general_work: work units of the local search over general plans exact runs first past 16 computed "
      "nodes (0: stage plans only); max_recompute: forward passes its general plans may recompute (None: no limit).");

  m.def(
      "simulate",
      [](const graph& g, const py::iterable& steps, bool timeline) {
        const schedule s = schedule_from_python(g, steps);
        return py_simulation{simulate(g, s, {.record_timeline = timeline})};
      },
      py::arg("graph"), py::arg("schedule"), py::kw_only(), py::arg("timeline") = false,
      "The exact peak bytes and times of a schedule of (kind, node) steps.");

  m.def(
      "kept_schedule",
      [](const graph& g, const py::iterable& kept) {
        node_set keep(g.size());
        for (const py::handle& x : kept) {
          const std::string name = py::str(x);
          auto v = g.find(name);
          if (!v) throw py::value_error("kept: no node named '" + name + "'");
          keep.insert(*v);
        }
        return schedule_to_python(g, schedule_from_kept(g, keep));
      },
      py::arg("graph"), py::arg("kept"),
      "The schedule of the kept-set plan that keeps `kept` (node names) through the forward and recomputes "
      "every other value just before the backward that reads it (remat::schedule_from_kept).");

  m.attr("methods") = [] {
    std::vector<std::string> out;
    for (method x : all_methods) out.emplace_back(to_string(x));
    return out;
  }();
}
