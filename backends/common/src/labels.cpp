#include "remat/ops/labels.hpp"

#include <string>

#include <remat/error.hpp>

namespace remat::ops {

void check_labels(const graph& g, std::span<const op_info> ops,
                  const std::function<std::span<const std::int64_t>(node_id)>& labels_of) {
  for (node_id v = 0; v < g.size(); ++v) {
    const op_info& o = ops[v];
    if (o.kind != op_kind::softmax_cross_entropy) continue;
    for (std::int64_t label : labels_of(g.inputs(v)[1]))
      if (label < 0 || label >= o.classes)
        throw error("node '" + g.node_name(v) + "' (softmax_cross_entropy): label " + std::to_string(label) +
                    " of '" + g.node_name(g.inputs(v)[1]) + "' is outside [0, " + std::to_string(o.classes) + ")");
  }
}

}  // namespace remat::ops
