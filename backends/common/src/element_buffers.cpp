#include "remat/ops/element_buffers.hpp"

namespace remat::ops {

std::vector<buffer_lifetime> element_buffers(const graph& g, std::span<const op_info> ops, const schedule& steps,
                                             std::size_t element_size) {
  std::vector<buffer_lifetime> buffers = buffer_lifetimes(g, steps);
  for (buffer_lifetime& b : buffers) {
    const op_info& o = ops[b.node];
    if (b.category == memory_category::parameter_gradients) b.bytes = o.parameter_elements() * element_size;
    else if (b.category != memory_category::workspace) b.bytes = o.elements() * element_size;
  }
  return buffers;
}

}  // namespace remat::ops
