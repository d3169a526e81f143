#pragma once

/// \file
/// The buffers a runtime allocates for a schedule, sized at the runtime's
/// element size: the core's buffer lifetimes (runtime/layout.hpp) with the bytes of
/// the parsed ops.

#include <remat/config.hpp>

#include <cstddef>
#include <span>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/runtime/layout.hpp>

#include "op.hpp"

namespace remat::ops {

/// The buffers of `steps` (buffer_lifetimes) sized for a runtime that stores
/// `element_size` bytes per element: values and gradients elements × size,
/// parameter gradients parameter elements × size, workspaces as the graph
/// declares them. For f32 graphs and element_size 4 the bytes are the graph's.
/// O(steps + m).
std::vector<buffer_lifetime> element_buffers(const graph& g, std::span<const op_info> ops, const schedule& steps,
                                             std::size_t element_size);

}  // namespace remat::ops
