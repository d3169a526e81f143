#pragma once

/// \file
/// remat::plan: a checkpointing plan as every solver returns it — its
/// schedule (plan/schedule.hpp, the one plan form), the decision it was built
/// from and the execution order it runs in.

#include <remat/config.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/schedule.hpp>

namespace remat {

/// A checkpointing plan: its schedule (the one plan form), the decision it was
/// built from (a kept set or a stage assignment, the other left empty; or,
/// for a general plan, both and each stage's recompute mode) and the
/// execution order its schedule runs the nodes in.
struct plan {
  std::string method;
  schedule steps;
  node_set kept;
  std::vector<std::uint32_t> stage_of;
  /// A general plan's recompute mode per stage (schedule_from_kept_stages); empty otherwise.
  std::vector<stage_recompute> stage_modes;
  /// A topological order of all nodes; empty: the graph's id order.
  std::vector<node_id> order;

  static plan from_kept(const graph& g, node_set kept, std::string method, std::vector<node_id> order = {}) {
    plan p;
    p.method = std::move(method);
    p.steps = schedule_from_kept(g, kept, order);
    p.kept = std::move(kept);
    p.order = std::move(order);
    return p;
  }
  static plan from_stages(const graph& g, std::vector<std::uint32_t> stage_of, std::string method,
                          std::vector<node_id> order = {}) {
    plan p;
    p.method = std::move(method);
    p.steps = schedule_from_stages(g, stage_of, order);
    p.stage_of = std::move(stage_of);
    p.order = std::move(order);
    return p;
  }
};

}  // namespace remat
