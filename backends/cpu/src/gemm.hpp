#pragma once

// A packed, cache-blocked GEMM (Goto & van de Geijn's layering): B is packed
// into kc × nc panels of NR columns, A into mc × kc panels of MR rows, and a
// register-blocked MR × NR micro-kernel runs over each pair. Packing makes
// every sum independent of the operands' addresses and strides, and each
// C[i][j] sums its products in increasing k, so results are reproducible bit
// for bit for given shapes.

#include <cstddef>

namespace remat::cpu::detail {

/// C[m×n] = op(A)[m×k] · op(B)[k×n], or C += … when `accumulate`. Row-major
/// with leading dimensions; op(A)(i, p) is a[p·lda + i] when trans_a, else
/// a[i·lda + p] (B likewise). Packing buffers are per thread and reused
/// (at most KC·(NC + MC) elements). O(m·n·k).
template <class T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda,
          const T* b, std::size_t ldb, T* c, std::size_t ldc, bool accumulate);

}  // namespace remat::cpu::detail
