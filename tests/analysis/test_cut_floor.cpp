// The cut floor (analysis/cut_floor.hpp): held to the least peak over every
// single-level schedule of small graphs, and its figures on the zoo.

#include <doctest/doctest.h>

#include <algorithm>

#include <remat/analysis/backward_order_floor.hpp>
#include <remat/analysis/cut_floor.hpp>
#include <remat/analysis/window_floor.hpp>
#include <remat/solvers/common.hpp>
#include <remat/zoo/models.hpp>

#include "../support/all_schedules.hpp"

using namespace remat;

// REMAT_CUT_FLOOR_GRAPHS raises the count for the figures in docs/algorithms.md.
TEST_CASE("the cut floor holds for every schedule of small random DAGs, and reaches the least peak above the per-op floor") {
  std::uint64_t graphs = 0, raised = 0, reached = 0, reached_by_cut = 0;
  test::for_small_random_dags("REMAT_CUT_FLOOR_GRAPHS", 3000, [&](const graph& g, std::uint64_t least) {
    const backward_floor floors = backward_floors(g);
    const op_floor per_op = per_op_floor(g, floors);
    const cut_floor cut = cut_floor_of(g, floors, per_op.bytes);
    REQUIRE(cut.bytes <= least);
    // Searched only above the per-op floor: 0 when nothing passes it.
    CHECK((cut.bytes == 0 || cut.bytes > per_op.bytes));
    ++graphs;
    raised += cut.bytes > 0;
    reached += std::max(cut.bytes, per_op.bytes) == least;
    reached_by_cut += cut.bytes == least;
    // The bound solvers report: the cut floor only for plans above the per-op
    // floor, and where the backward-order floor is not higher.
    CHECK(schedule_bound_for(g, floors, per_op.bytes, per_op.bytes, 0).bytes == per_op.bytes);
    const schedule_bound above = schedule_bound_for(g, floors, per_op.bytes, least, 0);
    const std::uint64_t order = backward_order_floor_of(g).bytes;
    const node_id first = 0;
    const std::uint64_t window =
        std::max(cut.bytes, order) >= least ? 0 : window_floor_of(g, std::span<const node_id>(&first, 1)).bytes;
    CHECK(above.bytes == std::max({cut.bytes, per_op.bytes, order, window}));
    CHECK((above.name.find("the cut floor") != std::string::npos) ==
          (cut.bytes > 0 && least > per_op.bytes && order <= cut.bytes && window <= cut.bytes));
    // The time objective's plans keep the per-op floor.
    CHECK(schedule_bound_for(g, floors, per_op.bytes, least, 0, objective::time).bytes == per_op.bytes);
  });
  MESSAGE(graphs << " graphs of 3-7 computed nodes: the cut floor passes the per-op floor on " << raised
                 << ", and is the least peak over every schedule there on " << reached_by_cut
                 << "; the larger of the two is the least peak on " << reached);
  CHECK(raised > 0);
  CHECK(reached_by_cut > 0);
}

TEST_CASE("the cut floor lifts the residual networks' bound: a convolution's read value, held or recomputed") {
  // In a bottleneck block, conv1's backward reads the block's input. It
  // cannot be held across bn3's backward, beside the skip connection's
  // pending gradient, so it is recomputed after it, under the gradient of
  // the chain between (and conv3's parameter gradient, when the chain's
  // gradient is past conv3). Figures of 2026-12-01; before the descendants
  // were looked at, the bound was set at conv3, 65,536 bytes (conv3's
  // parameter gradient) lower on the ResNets and PSPNet.
  struct expected {
    const char* model;
    std::uint64_t per_op, cut;
    const char* node;
    const char* after;  // nullptr: from the last consumer's backward
  };
  for (const expected& e : {expected{"resnet50", 1'064'457'792, 1'115'903'552, "layer1.1.conv1", "layer1.1.bn3"},
                            expected{"resnet101", 786'085'184, 811'840'832, "layer1.1.conv1", "layer1.1.bn3"},
                            expected{"resnet152", 696'079'552, 708'990'144, "layer1.1.conv1", "layer1.1.bn3"},
                            expected{"densenet121", 441'646'912, 467'335'232, "features.denseblock1.denselayer6.norm1", nullptr},
                            expected{"pspnet", 684'372'612, 692'640'644, "backbone.layer1.1.conv1", "backbone.layer1.1.bn3"}}) {
    CAPTURE(e.model);
    const graph g = zoo::build(e.model);
    const backward_floor floors = backward_floors(g);
    const std::uint64_t per_op = per_op_floor(g, floors).bytes;
    CHECK(per_op == e.per_op);
    const cut_floor cut = cut_floor_of(g, floors, per_op);
    CHECK(cut.bytes == e.cut);
    CHECK(g.node_name(cut.node) == e.node);
    REQUIRE(cut.after.has_value() == (e.after != nullptr));
    if (e.after) CHECK(g.node_name(*cut.after) == e.after);
  }
  const graph resnet = zoo::build("resnet50");
  CHECK(resnet.params(*resnet.find("layer1.1.conv3")) == 65'536);
  // Where a single step sets the bound, nothing passes the per-op floor.
  for (const char* model : {"vgg16", "resnet18", "unet", "googlenet", "darts-cifar10"}) {
    CAPTURE(model);
    const graph g = zoo::build(model);
    const backward_floor floors = backward_floors(g);
    CHECK(cut_floor_of(g, floors, per_op_floor(g, floors).bytes).bytes == 0);
  }
}
