// mini's device kernels: a tiled GEMM with transposes for the dense layer,
// elementwise kernels, and a one-block softmax cross entropy. Plain CUDA; the
// point is the binding, not the speed.

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "mini_cuda.hpp"

namespace mini {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string("mini: ") + what + ": " + cudaGetErrorString(status));
}

constexpr int tile = 16;

// C[m][n] = sum_k A(m, k) B(k, n) (+ C when accumulate), row-major; A(m, k) is
// a[m * lda + k], or a[k * lda + m] when trans_a; B likewise.
__global__ void gemm(int m, int n, int k, const float* a, int lda, bool trans_a, const float* b, int ldb,
                     bool trans_b, float* c, bool accumulate) {
  __shared__ float as[tile][tile + 1];
  __shared__ float bs[tile][tile + 1];
  const int row = blockIdx.y * tile + threadIdx.y;
  const int col = blockIdx.x * tile + threadIdx.x;
  float sum = 0;
  for (int t = 0; t < k; t += tile) {
    const int ak = t + threadIdx.x, bk = t + threadIdx.y;
    as[threadIdx.y][threadIdx.x] =
        row < m && ak < k ? (trans_a ? a[static_cast<std::size_t>(ak) * lda + row] : a[static_cast<std::size_t>(row) * lda + ak]) : 0.0f;
    bs[threadIdx.y][threadIdx.x] =
        bk < k && col < n ? (trans_b ? b[static_cast<std::size_t>(col) * ldb + bk] : b[static_cast<std::size_t>(bk) * ldb + col]) : 0.0f;
    __syncthreads();
    for (int j = 0; j < tile; ++j) sum += as[threadIdx.y][j] * bs[j][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) {
    float& out = c[static_cast<std::size_t>(row) * n + col];
    out = accumulate ? out + sum : sum;
  }
}

void launch_gemm(cudaStream_t s, int m, int n, int k, const float* a, int lda, bool trans_a, const float* b, int ldb,
                 bool trans_b, float* c, bool accumulate) {
  const dim3 block(tile, tile), grid((n + tile - 1) / tile, (m + tile - 1) / tile);
  gemm<<<grid, block, 0, s>>>(m, n, k, a, lda, trans_a, b, ldb, trans_b, c, accumulate);
  check(cudaGetLastError(), "gemm launch");
}

__global__ void add_bias(int rows, int out, const float* bias, float* y) {
  const std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (e < static_cast<std::size_t>(rows) * out) y[e] += bias[e % out];
}

// db[o] = sum over rows of dy[r][o]
__global__ void column_sums(int rows, int out, const float* dy, float* db) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= out) return;
  float s = 0;
  for (int r = 0; r < rows; ++r) s += dy[static_cast<std::size_t>(r) * out + o];
  db[o] = s;
}

__global__ void relu_forward(std::size_t n, const float* x, float* y) {
  const std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (e < n) y[e] = x[e] > 0 ? x[e] : 0.0f;
}
__global__ void relu_backward(std::size_t n, const float* y, const float* dy, float* dx, bool accumulate) {
  const std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (e >= n) return;
  const float g = y[e] > 0 ? dy[e] : 0.0f;
  dx[e] = accumulate ? dx[e] + g : g;
}
__global__ void add_forward(std::size_t n, const float* a, const float* b, float* y) {
  const std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (e < n) y[e] = a[e] + b[e];
}
__global__ void pass_gradient(std::size_t n, const float* dy, float* dx, bool accumulate) {
  const std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (e < n) dx[e] = accumulate ? dx[e] + dy[e] : dy[e];
}
__global__ void fill(float* p, float value) { *p = value; }
__global__ void sgd_kernel(std::size_t n, float rate, const float* g, float* p) {
  const std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (e < n) p[e] -= rate * g[e];
}

constexpr int loss_threads = 256;

// One block: row-wise softmax into `probabilities`, mean negative
// log-likelihood into *loss; with dz set, also dz = seed (p - onehot) / rows.
__global__ void softmax_cross_entropy(int rows, int classes, const float* logits, const std::int32_t* labels,
                                      float* probabilities, float* loss, const float* seed, float* dz,
                                      bool accumulate) {
  __shared__ float partial[loss_threads];
  float nll = 0;
  for (int r = threadIdx.x; r < rows; r += blockDim.x) {
    const float* z = logits + static_cast<std::size_t>(r) * classes;
    float* p = probabilities + static_cast<std::size_t>(r) * classes;
    float top = z[0];
    for (int c = 1; c < classes; ++c) top = fmaxf(top, z[c]);
    float sum = 0;
    for (int c = 0; c < classes; ++c) sum += (p[c] = expf(z[c] - top));
    for (int c = 0; c < classes; ++c) p[c] /= sum;
    nll -= logf(fmaxf(p[labels[r]], 1e-30f));
    if (dz)
      for (int c = 0; c < classes; ++c) {
        const float g = *seed * (p[c] - (labels[r] == c ? 1.0f : 0.0f)) / static_cast<float>(rows);
        float& d = dz[static_cast<std::size_t>(r) * classes + c];
        d = accumulate ? d + g : g;
      }
  }
  partial[threadIdx.x] = nll;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (static_cast<int>(threadIdx.x) < step) partial[threadIdx.x] += partial[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0 && loss) *loss = partial[0] / static_cast<float>(rows);
}

unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + 255) / 256); }

}  // namespace

device_batch::device_batch(const batch& b) {
  check(cudaMalloc(&x_, b.x.size() * sizeof(float)), "cudaMalloc for the batch");
  check(cudaMalloc(&labels_, b.labels.size() * sizeof(std::int32_t)), "cudaMalloc for the labels");
  check(cudaMemcpy(x_, b.x.data(), b.x.size() * sizeof(float), cudaMemcpyHostToDevice), "copying the batch");
  check(cudaMemcpy(labels_, b.labels.data(), b.labels.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice),
        "copying the labels");
}

device_batch::~device_batch() {
  (void)cudaFree(x_);
  (void)cudaFree(labels_);
}

device_engine::device_engine(const network& net) : net_(&net), parameters_(net.size(), nullptr) {
  check(cudaMallocHost(&loss_, sizeof(float)), "cudaMallocHost for the loss");
  *loss_ = 0;
  for (std::size_t i = 0; i < net.size(); ++i) {
    const std::vector<float>& p = net.parameters(i);
    if (p.empty()) continue;
    check(cudaMalloc(&parameters_[i], p.size() * sizeof(float)), "cudaMalloc for parameters");
    check(cudaMemcpy(parameters_[i], p.data(), p.size() * sizeof(float), cudaMemcpyHostToDevice), "copying parameters");
  }
}

device_engine::~device_engine() {
  for (float* p : parameters_) (void)cudaFree(p);
  (void)cudaFreeHost(loss_);
}

float device_engine::loss() const noexcept { return *loss_; }

std::vector<float> device_engine::parameters(std::size_t i) const {
  return download(parameters_[i], net_->parameter_elements(i));
}

std::vector<float> device_engine::download(const void* p, std::size_t elements) {
  std::vector<float> out(elements);
  if (elements > 0) check(cudaMemcpy(out.data(), p, elements * sizeof(float), cudaMemcpyDeviceToHost), "copying to the host");
  return out;
}

void device_engine::sgd_layer(std::size_t i, float rate, const void* gradient, void* stream) {
  const std::size_t n = net_->parameter_elements(i);
  sgd_kernel<<<blocks_for(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(n, rate, static_cast<const float*>(gradient),
                                                                          parameters_[i]);
  check(cudaGetLastError(), "sgd launch");
}

void device_engine::forward(const remat::forward_call& f) {
  const network& net = *net_;
  const layer& l = net.at(f.original);
  const auto s = static_cast<cudaStream_t>(f.stream);
  const auto* x = static_cast<const float*>(f.inputs[0]);
  auto* y = static_cast<float*>(f.output);
  const std::size_t n = net.elements(f.original);
  switch (l.op) {
    case op::dense: {
      const int in = net.in_features(f.original);
      const float* w = parameters_[f.original];
      launch_gemm(s, l.rows, l.features, in, x, in, false, w, l.features, false, y, false);
      add_bias<<<blocks_for(n), 256, 0, s>>>(l.rows, l.features, w + static_cast<std::size_t>(in) * l.features, y);
      break;
    }
    case op::relu: relu_forward<<<blocks_for(n), 256, 0, s>>>(n, x, y); break;
    case op::add: add_forward<<<blocks_for(n), 256, 0, s>>>(n, x, static_cast<const float*>(f.inputs[1]), y); break;
    case op::softmax_cross_entropy: {
      const layer& z = net.at(static_cast<std::size_t>(l.operands[0]));
      softmax_cross_entropy<<<1, loss_threads, 0, s>>>(z.rows, z.features, x, static_cast<const std::int32_t*>(f.inputs[1]),
                                                       static_cast<float*>(f.workspace), y, nullptr, nullptr, false);
      if (!f.recompute) check(cudaMemcpyAsync(loss_, y, sizeof(float), cudaMemcpyDeviceToHost, s), "copying the loss");
      break;
    }
    default: throw std::logic_error("mini: remat asked to compute graph input '" + l.name + "'");
  }
  check(cudaGetLastError(), "forward launch");
}

void device_engine::backward(const remat::backward_call& c) {
  const network& net = *net_;
  const layer& l = net.at(c.original);
  const auto s = static_cast<cudaStream_t>(c.stream);
  auto* dy = static_cast<float*>(c.output_gradient);
  const std::size_t n = net.elements(c.original);
  if (c.seed) fill<<<1, 1, 0, s>>>(dy, 1.0f);  // d loss / d loss
  auto dx = [&](std::size_t k) { return static_cast<float*>(c.input_gradients[k]); };
  auto adds = [&](std::size_t k) { return c.how[k] == remat::contribution::add; };
  switch (l.op) {
    case op::dense: {
      const int in = net.in_features(c.original), out = l.features;
      const float* w = parameters_[c.original];
      const auto* x = static_cast<const float*>(c.inputs[0]);
      auto* dw = static_cast<float*>(c.parameter_gradient);
      if (dx(0)) launch_gemm(s, l.rows, in, out, dy, out, false, w, out, true, dx(0), adds(0));  // dy wᵀ
      launch_gemm(s, in, out, l.rows, x, in, true, dy, out, false, dw, false);                  // xᵀ dy
      column_sums<<<blocks_for(static_cast<std::size_t>(out)), 256, 0, s>>>(l.rows, out, dy,
                                                                              dw + static_cast<std::size_t>(in) * out);
      break;
    }
    case op::relu:
      if (dx(0)) relu_backward<<<blocks_for(n), 256, 0, s>>>(n, static_cast<const float*>(c.output), dy, dx(0), adds(0));
      break;
    case op::add:
      for (std::size_t k = 0; k < 2; ++k)
        if (dx(k)) pass_gradient<<<blocks_for(n), 256, 0, s>>>(n, dy, dx(k), adds(k));
      break;
    case op::softmax_cross_entropy: {
      const layer& z = net.at(static_cast<std::size_t>(l.operands[0]));
      if (dx(0))
        softmax_cross_entropy<<<1, loss_threads, 0, s>>>(z.rows, z.features, static_cast<const float*>(c.inputs[0]),
                                                         static_cast<const std::int32_t*>(c.inputs[1]),
                                                         static_cast<float*>(c.workspace), nullptr, dy, dx(0), adds(0));
      break;
    }
    default: throw std::logic_error("mini: remat asked to differentiate graph input '" + l.name + "'");
  }
  check(cudaGetLastError(), "backward launch");
}

}  // namespace mini
