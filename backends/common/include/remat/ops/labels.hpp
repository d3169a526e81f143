#pragma once

/// \file
/// The check both runtimes make before a training step: every class label a
/// loss reads is one of its classes (the kernels assume it).

#include <remat/config.hpp>

#include <cstdint>
#include <functional>
#include <span>

#include <remat/graph/graph.hpp>

#include "op.hpp"

namespace remat::ops {

/// \throws remat::error naming the loss node and the input when a label that
/// `labels_of(input)` returns for a softmax_cross_entropy is outside its
/// classes. O(labels).
void check_labels(const graph& g, std::span<const op_info> ops,
                  const std::function<std::span<const std::int64_t>(node_id)>& labels_of);

}  // namespace remat::ops
