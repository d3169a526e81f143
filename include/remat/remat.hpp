#pragma once

/// \file
/// The whole core, along its data flow: graph concepts, remat::graph and
/// make_graph; the plan form, its builders and the simulator; the analyses
/// (lower sets, bounds, orders); every solver and remat::solve on top. File
/// I/O lives in <remat/io/...> (it needs nlohmann/json), the model zoo in
/// <remat/zoo.hpp>, the runtime layout in <remat/runtime/...> and reports in
/// <remat/report/...>.

#include <remat/config.hpp>

#include <remat/analysis/backward_order_floor.hpp>
#include <remat/analysis/bounds.hpp>
#include <remat/analysis/cut_floor.hpp>
#include <remat/error.hpp>
#include <remat/graph/concepts.hpp>
#include <remat/graph/costs.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/make_graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solve.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/time_budget.hpp>
#include <remat/units.hpp>
#include <remat/version.hpp>
