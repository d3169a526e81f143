#include "gemm.hpp"

#include <algorithm>
#include <vector>

namespace remat::cpu::detail {
namespace {

// Register blocks sized for 16 SIMD registers of 128 bits (x86-64's baseline):
// MR × NR accumulators plus one B row and one broadcast A value.
template <class T>
struct blocking;
template <>
struct blocking<float> {
  static constexpr std::size_t mr = 6, nr = 8, kc = 256, mc = 96, nc = 1024;
};
template <>
struct blocking<double> {
  static constexpr std::size_t mr = 6, nr = 4, kc = 256, mc = 96, nc = 512;
};

// Packs op(A)[i0 : i0 + mc, p0 : p0 + kc] as consecutive MR-row panels, each
// stored k-major, zero-padded to a whole panel.
template <class T>
void pack_a(bool trans, const T* a, std::size_t lda, std::size_t i0, std::size_t mc, std::size_t p0, std::size_t kc,
            T* out) {
  constexpr std::size_t mr = blocking<T>::mr;
  for (std::size_t i = 0; i < mc; i += mr) {
    const std::size_t rows = std::min(mr, mc - i);
    for (std::size_t p = 0; p < kc; ++p) {
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t row = i0 + i + r, col = p0 + p;
        out[r] = trans ? a[col * lda + row] : a[row * lda + col];
      }
      for (std::size_t r = rows; r < mr; ++r) out[r] = T(0);
      out += mr;
    }
  }
}

// Packs op(B)[p0 : p0 + kc, j0 : j0 + nc] as consecutive NR-column panels.
template <class T>
void pack_b(bool trans, const T* b, std::size_t ldb, std::size_t p0, std::size_t kc, std::size_t j0, std::size_t nc,
            T* out) {
  constexpr std::size_t nr = blocking<T>::nr;
  for (std::size_t j = 0; j < nc; j += nr) {
    const std::size_t cols = std::min(nr, nc - j);
    for (std::size_t p = 0; p < kc; ++p) {
      const std::size_t row = p0 + p;
      if (!trans && cols == nr) {
        const T* src = b + row * ldb + j0 + j;
        for (std::size_t q = 0; q < nr; ++q) out[q] = src[q];
      } else {
        for (std::size_t q = 0; q < cols; ++q) {
          const std::size_t col = j0 + j + q;
          out[q] = trans ? b[col * ldb + row] : b[row * ldb + col];
        }
        for (std::size_t q = cols; q < nr; ++q) out[q] = T(0);
      }
      out += nr;
    }
  }
}

// acc = A panel · B panel over kc, then C (rows × cols of it) = or += acc.
template <class T>
void micro_kernel(std::size_t kc, const T* a, const T* b, T* c, std::size_t ldc, std::size_t rows, std::size_t cols,
                  bool add) {
  constexpr std::size_t mr = blocking<T>::mr, nr = blocking<T>::nr;
  T acc[mr][nr] = {};
  for (std::size_t p = 0; p < kc; ++p) {
    for (std::size_t i = 0; i < mr; ++i) {
      const T ai = a[i];
      for (std::size_t j = 0; j < nr; ++j) acc[i][j] += ai * b[j];
    }
    a += mr;
    b += nr;
  }
  for (std::size_t i = 0; i < rows; ++i) {
    T* row = c + i * ldc;
    if (add)
      for (std::size_t j = 0; j < cols; ++j) row[j] += acc[i][j];
    else
      for (std::size_t j = 0; j < cols; ++j) row[j] = acc[i][j];
  }
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda,
          const T* b, std::size_t ldb, T* c, std::size_t ldc, bool accumulate) {
  using blk = blocking<T>;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (std::size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  thread_local std::vector<T> packed_a, packed_b;
  packed_a.resize((blk::mc + blk::mr) * blk::kc);
  packed_b.resize((blk::nc + blk::nr) * blk::kc);
  for (std::size_t j0 = 0; j0 < n; j0 += blk::nc) {
    const std::size_t nc = std::min(blk::nc, n - j0);
    for (std::size_t p0 = 0; p0 < k; p0 += blk::kc) {
      const std::size_t kc = std::min(blk::kc, k - p0);
      const bool add = accumulate || p0 > 0;
      pack_b(trans_b, b, ldb, p0, kc, j0, nc, packed_b.data());
      for (std::size_t i0 = 0; i0 < m; i0 += blk::mc) {
        const std::size_t mc = std::min(blk::mc, m - i0);
        pack_a(trans_a, a, lda, i0, mc, p0, kc, packed_a.data());
        for (std::size_t j = 0; j < nc; j += blk::nr)
          for (std::size_t i = 0; i < mc; i += blk::mr)
            micro_kernel(kc, packed_a.data() + i * kc, packed_b.data() + j * kc, c + (i0 + i) * ldc + j0 + j, ldc,
                         std::min(blk::mr, mc - i), std::min(blk::nr, nc - j), add);
      }
    }
  }
}

template void gemm<float>(bool, bool, std::size_t, std::size_t, std::size_t, const float*, std::size_t, const float*,
                          std::size_t, float*, std::size_t, bool);
template void gemm<double>(bool, bool, std::size_t, std::size_t, std::size_t, const double*, std::size_t,
                           const double*, std::size_t, double*, std::size_t, bool);

}  // namespace remat::cpu::detail
