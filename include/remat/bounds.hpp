#pragma once

/// \file
/// Lower bounds that hold for every schedule of a graph.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph.hpp"

namespace remat {

/// For every node, the sum of `weight(u)` over its strict descendants u, each
/// counted once. Reachability is propagated in reverse id order over blocks of
/// 4096 candidate descendants at a time (memory O(n · 512 bytes)); the weight of
/// a reachable block is summed with per-byte lookup tables, and words that are
/// empty or full cost one test. Complexity: O((m + n) · n / 64) time.
template <class Weight>
std::vector<std::uint64_t> descendant_sums(const graph& g, Weight&& weight) {
  constexpr std::size_t block_words = 64;
  constexpr std::size_t block = block_words * 64;
  const std::size_t n = g.size();
  std::vector<std::uint64_t> sums(n, 0);
  std::vector<std::uint64_t> bits;
  std::vector<std::uint64_t> byte_sum(block_words * 8 * 256);  // [word][byte][pattern]
  std::vector<std::uint64_t> word_sum(block_words);
  for (std::size_t lo = 0; lo < n; lo += block) {
    const std::size_t hi = std::min(n, lo + block);
    for (std::size_t w = 0; w < block_words; ++w) {
      word_sum[w] = 0;
      for (std::size_t b = 0; b < 8; ++b) {
        std::uint64_t* table = &byte_sum[(w * 8 + b) * 256];
        for (std::size_t pattern = 0; pattern < 256; ++pattern) {
          std::uint64_t total = 0;
          for (std::size_t k = 0; k < 8; ++k) {
            const std::size_t u = lo + w * 64 + b * 8 + k;
            if ((pattern >> k) & 1U && u < hi) total += weight(u);
          }
          table[pattern] = total;
        }
        word_sum[w] += table[255];
      }
    }
    bits.assign(hi * block_words, 0);  // only ids below hi can reach [lo, hi)
    for (std::size_t v = hi; v-- > 0;) {
      std::uint64_t* mine = &bits[v * block_words];
      for (node_id s : g.successors(v)) {
        if (s >= hi) continue;
        if (s >= lo) mine[(s - lo) / 64] |= std::uint64_t{1} << ((s - lo) % 64);
        const std::uint64_t* theirs = &bits[s * block_words];
        for (std::size_t w = 0; w < block_words; ++w) mine[w] |= theirs[w];
      }
      std::uint64_t total = 0;
      for (std::size_t w = 0; w < block_words; ++w) {
        const std::uint64_t word = mine[w];
        if (word == 0) continue;
        if (word == ~std::uint64_t{0}) {
          total += word_sum[w];
          continue;
        }
        for (std::size_t b = 0; b < 8; ++b)
          total += byte_sum[(w * 8 + b) * 256 + ((word >> (8 * b)) & 0xFFU)];
      }
      sums[v] += total;
    }
  }
  return sums;
}

/// The per-op floor: the memory some single step needs under any schedule.
struct op_floor {
  std::uint64_t bytes = 0;  ///< no schedule's peak is below this
  node_id node = 0;         ///< the op that sets it
  bool backward = false;    ///< in its backward (else its forward)
};

/// Computes the per-op floor. Every schedule runs each node's forward at least
/// once (operands, output and workspace alive, parameters and inputs resident)
/// and its backward once, after the backwards of all its descendants, whose
/// parameter gradients then exist; that step also holds v's own parameter
/// gradient, v's output gradient, the values v's backward reads, a gradient
/// buffer per operand and the backward workspace. The floor is the largest of
/// these over all nodes. Complexity: that of descendant_sums.
inline op_floor per_op_floor(const graph& g) {
  const std::uint64_t resident = g.param_bytes() + g.input_bytes();
  const auto later_params = descendant_sums(g, [&](std::size_t u) { return g.params(u); });
  op_floor best;
  best.bytes = resident;  // what every step holds, even when nothing is computed
  for (node_id v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    std::uint64_t forward = resident + g.bytes(v) + g.workspace(v);
    std::uint64_t backward =
        resident + later_params[v] + g.params(v) + g.bytes(v) + g.backward_workspace(v);
    if (reads_output(g.reads(v))) backward += g.bytes(v);
    for (node_id p : g.predecessors(v)) {
      if (g.is_input(p)) continue;
      forward += g.bytes(p);
      backward += g.bytes(p);                                // its gradient buffer
      if (reads_inputs(g.reads(v))) backward += g.bytes(p);  // its value
    }
    if (forward > best.bytes) best = {forward, v, false};
    if (backward > best.bytes) best = {backward, v, true};
  }
  return best;
}

}  // namespace remat
