// The model: the op model's parsed graph and initial state, uploaded; cuDNN
// descriptors and algorithms for every convolution; cuBLAS GEMMs for linear
// layers.

#include <algorithm>
#include <array>
#include <climits>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <remat/error.hpp>

#include "check.cuh"
#include "elements.hpp"
#include "model_state.cuh"
#include "remat/cuda/model.hpp"
#include "remat/cuda/plan.hpp"

namespace remat::cuda {
namespace detail {
namespace {

// Fails unless every extent fits the int that cuDNN and cuBLAS take.
void fits_int(const std::string& context, std::initializer_list<std::int64_t> extents) {
  for (std::int64_t e : extents)
    if (e > INT_MAX)
      throw remat::error(context + ": an extent of " + std::to_string(e) +
                         " elements is beyond the 32-bit sizes cuDNN and cuBLAS take");
}

// What the CUDA kernels and libraries take beyond the op contract.
void check_device_limits(const graph& g, std::span<const ops::op_info> ops) {
  for (node_id v = 0; v < g.size(); ++v) {
    const ops::op_info& o = ops[v];
    const std::string at = "node '" + g.node_name(v) + "' (" + g.op(v) + ")";
    switch (o.kind) {
      case ops::op_kind::conv2d:
      case ops::op_kind::conv_transpose2d:
        fits_int(at, {static_cast<std::int64_t>(ops[g.inputs(v)[0]].elements()), static_cast<std::int64_t>(o.elements()),
                      static_cast<std::int64_t>(o.weight_elements)});
        if (o.conv.k > 65535) throw remat::error(at + ": more than 65535 output channels");
        break;
      case ops::op_kind::linear:
        fits_int(at, {o.rows * o.in_features, o.rows * o.out_features, o.in_features * o.out_features});
        if (o.out_features > 65535) throw remat::error(at + ": more than 65535 output features");
        break;
      case ops::op_kind::batch_norm:
        if (o.norm.c > 65535) throw remat::error(at + ": more than 65535 channels");
        break;
      case ops::op_kind::slice:
        if (o.in_dims.size() > static_cast<std::size_t>(elements::slice_geometry::max_rank))
          throw remat::error(at + ": the CUDA runtime slices tensors of rank " +
                             std::to_string(elements::slice_geometry::max_rank) + " at most");
        break;
      default: break;
    }
  }
}

bool tensor_math(cudnnMathType_t m) { return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION; }

// The first of cuDNN's ranked candidates that ran, fits the workspace limit
// and meets the options; null when none does.
template <class Perf>
const Perf* first_suitable(const std::vector<Perf>& ranked, const model_options& o) {
  for (const Perf& p : ranked) {
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > o.workspace_limit) continue;
    if (o.deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    if (!o.tf32 && tensor_math(p.mathType)) continue;
    return &p;
  }
  return nullptr;
}

std::string requirements(const model_options& o) {
  return std::string(o.deterministic ? "deterministic, " : "") + (o.tf32 ? "" : "without tensor-op math, ") +
         "with a workspace of at most " + std::to_string(o.workspace_limit) + " bytes";
}

template <class Perf>
const Perf& pick(const std::vector<Perf>& ranked, const model_options& o, const std::string& context,
                 const char* direction) {
  const Perf* p = first_suitable(ranked, o);
  if (!p)
    throw remat::error(context + ": cuDNN offers no " + direction + " convolution algorithm " + requirements(o));
  return *p;
}

// cuDNN's candidates for one convolution in the three directions, ranked
// (by its heuristics, or by measured time).
struct ranked_candidates {
  std::vector<cudnnConvolutionFwdAlgoPerf_t> forward;
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> backward_data;
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> backward_filter;
};

ranked_candidates rank_candidates(cudnnHandle_t h, const convolution& c, bool measured, const std::string& at) {
  ranked_candidates r;
  int count = 0, returned = 0;
  check(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count), "cudnnGetConvolutionForwardAlgorithmMaxCount", at);
  r.forward.resize(static_cast<std::size_t>(count));
  if (measured)
    check(cudnnFindConvolutionForwardAlgorithm(h, c.x.get(), c.w.get(), c.forward.get(), c.y.get(), count, &returned,
                                               r.forward.data()),
          "cudnnFindConvolutionForwardAlgorithm", at);
  else
    check(cudnnGetConvolutionForwardAlgorithm_v7(h, c.x.get(), c.w.get(), c.forward.get(), c.y.get(), count,
                                                 &returned, r.forward.data()),
          "cudnnGetConvolutionForwardAlgorithm_v7", at);
  r.forward.resize(static_cast<std::size_t>(returned));

  check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count), "cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
        at);
  r.backward_data.resize(static_cast<std::size_t>(count));
  if (measured)
    check(cudnnFindConvolutionBackwardDataAlgorithm(h, c.w.get(), c.y.get(), c.backward_data.get(), c.x.get(), count,
                                                    &returned, r.backward_data.data()),
          "cudnnFindConvolutionBackwardDataAlgorithm", at);
  else
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c.w.get(), c.y.get(), c.backward_data.get(), c.x.get(), count,
                                                      &returned, r.backward_data.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7", at);
  r.backward_data.resize(static_cast<std::size_t>(returned));

  check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count),
        "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount", at);
  r.backward_filter.resize(static_cast<std::size_t>(count));
  if (measured)
    check(cudnnFindConvolutionBackwardFilterAlgorithm(h, c.x.get(), c.y.get(), c.backward_filter.get(), c.w.get(),
                                                      count, &returned, r.backward_filter.data()),
          "cudnnFindConvolutionBackwardFilterAlgorithm", at);
  else
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, c.x.get(), c.y.get(), c.backward_filter.get(), c.w.get(),
                                                        count, &returned, r.backward_filter.data()),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7", at);
  r.backward_filter.resize(static_cast<std::size_t>(returned));
  return r;
}

// Measured rankings for the life of the process, by geometry and math type:
// timing every candidate is costly, and a network repeats its convolutions.
const ranked_candidates& measured_candidates(cudnnHandle_t h, const convolution& c, const ops::conv2d_geometry& g,
                                             bool tf32, const std::string& at) {
  static std::mutex guard;
  static std::map<std::array<std::int64_t, 15>, ranked_candidates> measured;
  const std::array<std::int64_t, 15> key{g.n,  g.c,  g.h,  g.w,  g.k,  g.kh, g.kw,    g.sh,
                                         g.sw, g.ph, g.pw, g.dh, g.dw, g.groups, tf32};
  const std::lock_guard<std::mutex> lock(guard);
  auto found = measured.find(key);
  if (found == measured.end()) found = measured.emplace(key, rank_candidates(h, c, true, at)).first;
  return found->second;
}

// Chooses the three algorithms of c (model_options::algorithm_search) and records their workspaces.
void choose_algorithms(cudnnHandle_t h, convolution& c, const ops::conv2d_geometry& g, const model_options& o,
                       const std::string& at) {
  ranked_candidates heuristic;
  const ranked_candidates& r = o.algorithm_search == model_options::search::measured
                                   ? measured_candidates(h, c, g, o.tf32, at)
                                   : (heuristic = rank_candidates(h, c, false, at));
  std::size_t bytes = 0;

  const auto& f = pick(r.forward, o, at, "forward");
  c.forward_algorithm = f.algo;
  if (o.tf32) check(cudnnSetConvolutionMathType(c.forward.get(), f.mathType), "cudnnSetConvolutionMathType", at);
  check(cudnnGetConvolutionForwardWorkspaceSize(h, c.x.get(), c.w.get(), c.forward.get(), c.y.get(), f.algo, &bytes),
        "cudnnGetConvolutionForwardWorkspaceSize", at);
  c.chosen.forward = static_cast<int>(f.algo);
  c.chosen.forward_workspace = bytes;

  const auto& d = pick(r.backward_data, o, at, "backward-data");
  c.backward_data_algorithm = d.algo;
  if (o.tf32) check(cudnnSetConvolutionMathType(c.backward_data.get(), d.mathType), "cudnnSetConvolutionMathType", at);
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(h, c.w.get(), c.y.get(), c.backward_data.get(), c.x.get(), d.algo,
                                                     &bytes),
        "cudnnGetConvolutionBackwardDataWorkspaceSize", at);
  c.chosen.backward_data = static_cast<int>(d.algo);
  c.chosen.backward_data_workspace = bytes;

  const auto& w = pick(r.backward_filter, o, at, "backward-filter");
  c.backward_filter_algorithm = w.algo;
  if (o.tf32) check(cudnnSetConvolutionMathType(c.backward_filter.get(), w.mathType), "cudnnSetConvolutionMathType", at);
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, c.x.get(), c.y.get(), c.backward_filter.get(), c.w.get(),
                                                       w.algo, &bytes),
        "cudnnGetConvolutionBackwardFilterWorkspaceSize", at);
  c.chosen.backward_filter = static_cast<int>(w.algo);
  c.chosen.backward_filter_workspace = bytes;
}

convolution_descriptor convolution_of(const ops::conv2d_geometry& g, cudnnMathType_t math, const std::string& at) {
  cudnnConvolutionDescriptor_t raw = nullptr;
  check(cudnnCreateConvolutionDescriptor(&raw), "cudnnCreateConvolutionDescriptor", at);
  convolution_descriptor c(raw);
  check(cudnnSetConvolution2dDescriptor(raw, static_cast<int>(g.ph), static_cast<int>(g.pw), static_cast<int>(g.sh),
                                        static_cast<int>(g.sw), static_cast<int>(g.dh), static_cast<int>(g.dw),
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor", at);
  check(cudnnSetConvolutionGroupCount(raw, static_cast<int>(g.groups)), "cudnnSetConvolutionGroupCount", at);
  check(cudnnSetConvolutionMathType(raw, math), "cudnnSetConvolutionMathType", at);
  return c;
}

tensor_descriptor tensor_of(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, const std::string& at) {
  cudnnTensorDescriptor_t raw = nullptr;
  check(cudnnCreateTensorDescriptor(&raw), "cudnnCreateTensorDescriptor", at);
  tensor_descriptor t(raw);
  check(cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n), static_cast<int>(c),
                                   static_cast<int>(h), static_cast<int>(w)),
        "cudnnSetTensor4dDescriptor", at);
  return t;
}

}  // namespace

convolution describe(const ops::conv2d_geometry& g, cudnnMathType_t math, const std::string& at) {
  convolution c;
  c.x = tensor_of(g.n, g.c, g.h, g.w, at);
  c.y = tensor_of(g.n, g.k, g.oh(), g.ow(), at);
  cudnnFilterDescriptor_t raw = nullptr;
  check(cudnnCreateFilterDescriptor(&raw), "cudnnCreateFilterDescriptor", at);
  c.w.reset(raw);
  check(cudnnSetFilter4dDescriptor(raw, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(g.k),
                                   static_cast<int>(g.c / g.groups), static_cast<int>(g.kh), static_cast<int>(g.kw)),
        "cudnnSetFilter4dDescriptor", at);
  c.forward = convolution_of(g, math, at);
  c.backward_data = convolution_of(g, math, at);
  c.backward_filter = convolution_of(g, math, at);
  return c;
}

}  // namespace detail

std::vector<std::int64_t> convolution_output_shape(const ops::conv2d_geometry& g) {
  const detail::convolution c = detail::describe(g, CUDNN_FMA_MATH, "convolution_output_shape");
  int n = 0, k = 0, h = 0, w = 0;
  detail::check(cudnnGetConvolution2dForwardOutputDim(c.forward.get(), c.x.get(), c.w.get(), &n, &k, &h, &w),
                "cudnnGetConvolution2dForwardOutputDim", "convolution_output_shape");
  return {n, k, h, w};
}

template <class T>
model<T>::device_state::device_state(graph g, std::uint64_t seed, const model_options& o)
    : host(std::move(g), seed), options(o) {
  const graph& net = host.network();
  const std::size_t n = net.size();
  detail::check_device_limits(net, host.ops());
  for (node_id v = 0; v < n; ++v)
    if (host.op(v).kind == ops::op_kind::conv2d &&
        convolution_output_shape(host.op(v).conv) != host.op(v).shape)
      throw remat::error(where(v) + ": cuDNN's output shape differs from the graph's");
    else if (host.op(v).kind == ops::op_kind::conv_transpose2d &&
             convolution_output_shape(host.op(v).conv) != host.op(net.inputs(v)[0]).shape)
      throw remat::error(where(v) + ": cuDNN's shape for the adjoint convolution differs from the graph's");
  if (device_count() == 0) throw remat::error("no CUDA device to run '" + net.name() + "' on: " + no_device_reason());

  REMAT_CUDA_TRY(cudaSetDevice(0));
  REMAT_CUDA_TRY(cudaFree(nullptr));  // creates the context, so the next figure excludes it
  const std::uint64_t free_before = detail::free_and_total().first;

  cudaStream_t raw_stream = nullptr;
  REMAT_CUDA_TRY(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking));
  stream.reset(raw_stream);
  const std::string context = "graph '" + net.name() + "'";
  cudnnHandle_t raw_cudnn = nullptr;
  detail::check(cudnnCreate(&raw_cudnn), "cudnnCreate", context);
  cudnn.reset(raw_cudnn);
  detail::check(cudnnSetStream(raw_cudnn, raw_stream), "cudnnSetStream", context);
  cublasHandle_t raw_cublas = nullptr;
  detail::check(cublasCreate(&raw_cublas), "cublasCreate", context);
  cublas.reset(raw_cublas);
  detail::check(cublasSetStream(raw_cublas, raw_stream), "cublasSetStream", context);
  // cuBLAS's recommended workspace on Hopper; handed over after
  // cublasSetStream, which would reset it, so it never allocates its own.
  constexpr std::uint64_t gemm_workspace_bytes = std::uint64_t{32} << 20;
  gemm_workspace = detail::device_buffer(gemm_workspace_bytes, "cuBLAS's workspace for " + context);
  detail::check(cublasSetWorkspace(raw_cublas, gemm_workspace.get(), gemm_workspace_bytes), "cublasSetWorkspace",
                context);

  // Parameters, running statistics and inputs: one allocation each, every
  // node's part at an aligned offset.
  std::vector<std::uint64_t> parameter_at(n), statistics_at(n), input_at(n);
  std::uint64_t parameter_total = 0, statistics_total = 0, input_total = 0;
  for (node_id v = 0; v < n; ++v) {
    const ops::op_info& op = host.op(v);
    parameter_at[v] = parameter_total;
    parameter_total += aligned(op.parameter_elements() * sizeof(T));
    statistics_at[v] = statistics_total;
    if (op.kind == ops::op_kind::batch_norm) statistics_total += 2 * aligned(static_cast<std::uint64_t>(op.norm.c) * sizeof(T));
    input_at[v] = input_total;
    if (op.kind == ops::op_kind::input) input_total += aligned(op.elements() * (op.labels ? 8 : sizeof(T)));
  }
  parameter_storage = detail::device_buffer(parameter_total, "the parameters of " + context);
  statistics_storage = detail::device_buffer(statistics_total, "the batch-norm running statistics of " + context);
  input_storage = detail::device_buffer(input_total, "the inputs of " + context);
  parameters.assign(n, nullptr);
  running_mean.assign(n, nullptr);
  running_var.assign(n, nullptr);
  inputs.assign(n, nullptr);
  labels.assign(n, nullptr);
  for (node_id v = 0; v < n; ++v) {
    const ops::op_info& op = host.op(v);
    if (op.kind == ops::op_kind::input) {
      if (op.labels) labels[v] = input_storage.get<std::int64_t>(input_at[v]);
      else inputs[v] = input_storage.get<T>(input_at[v]);
      continue;
    }
    parameters[v] = parameter_storage.get<T>(parameter_at[v]);
    upload(parameters[v], host.parameters(v).data(), op.parameter_elements() * sizeof(T));
    if (op.kind == ops::op_kind::batch_norm) {
      const std::uint64_t bytes = static_cast<std::uint64_t>(op.norm.c) * sizeof(T);
      running_mean[v] = statistics_storage.get<T>(statistics_at[v]);
      running_var[v] = statistics_storage.get<T>(statistics_at[v] + aligned(bytes));
      upload(running_mean[v], host.running_mean(v).data(), bytes);
      upload(running_var[v], host.running_var(v).data(), bytes);
    }
  }
  upload_inputs();

  convolutions.resize(n);
  std::uint64_t workspace = 0;
  for (node_id v = 0; v < n; ++v) {
    // A transposed convolution runs the convolution it is the adjoint of backwards.
    if (host.op(v).kind != ops::op_kind::conv2d && host.op(v).kind != ops::op_kind::conv_transpose2d) continue;
    auto c = std::make_unique<detail::convolution>(
        detail::describe(host.op(v).conv, options.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH, where(v)));
    detail::choose_algorithms(raw_cudnn, *c, host.op(v).conv, options, where(v));
    workspace = std::max({workspace, c->chosen.forward_workspace, c->chosen.backward_data_workspace,
                          c->chosen.backward_filter_workspace});
    convolutions[v] = std::move(c);
  }
  convolution_workspace = detail::device_buffer(workspace, "the convolution workspace of " + context);

  memory.parameters = parameter_storage.bytes();
  memory.running_statistics = statistics_storage.bytes();
  memory.inputs = input_storage.bytes();
  memory.convolution_workspace = convolution_workspace.bytes();
  memory.gemm_workspace = gemm_workspace.bytes();
  memory.device_taken = detail::taken_since(free_before);
}

template <class T>
model<T>::device_state::~device_state() {
  if (stream) (void)cudaStreamSynchronize(stream.get());
}

template <class T>
std::string model<T>::device_state::where(node_id v) const {
  return "node '" + host.network().node_name(v) + "' (" + host.network().op(v) + ")";
}

template <class T>
void model<T>::device_state::upload(void* device, const void* source, std::uint64_t bytes) const {
  if (bytes == 0) return;
  REMAT_CUDA_TRY(cudaMemcpyAsync(device, source, bytes, cudaMemcpyHostToDevice, stream.get()));
  REMAT_CUDA_TRY(cudaStreamSynchronize(stream.get()));
}

template <class T>
void model<T>::device_state::download(void* destination, const void* device, std::uint64_t bytes) const {
  if (bytes == 0) return;
  REMAT_CUDA_TRY(cudaMemcpyAsync(destination, device, bytes, cudaMemcpyDeviceToHost, stream.get()));
  REMAT_CUDA_TRY(cudaStreamSynchronize(stream.get()));
}

template <class T>
void model<T>::device_state::upload_inputs() {
  for (node_id v = 0; v < host.network().size(); ++v) {
    if (labels[v]) upload(labels[v], host.labels(v).data(), host.labels(v).size_bytes());
    if (inputs[v]) upload(inputs[v], host.input(v).data(), host.input(v).size_bytes());
  }
}

template <class T>
void model<T>::device_state::convolve(node_id v, const T* x, const T* w, T* y) {
  const detail::convolution& c = *convolutions[v];
  const float one = 1, zero = 0;
  detail::check(cudnnConvolutionForward(cudnn.get(), &one, c.x.get(), x, c.w.get(), w, c.forward.get(),
                                        c.forward_algorithm, convolution_workspace.get(), c.chosen.forward_workspace,
                                        &zero, c.y.get(), y),
                "cudnnConvolutionForward", where(v));
}

template <class T>
void model<T>::device_state::convolve_adjoint(node_id v, const T* w, const T* dy, T* dx) {
  const detail::convolution& c = *convolutions[v];
  const float one = 1, zero = 0;
  detail::check(cudnnConvolutionBackwardData(cudnn.get(), &one, c.w.get(), w, c.y.get(), dy, c.backward_data.get(),
                                             c.backward_data_algorithm, convolution_workspace.get(),
                                             c.chosen.backward_data_workspace, &zero, c.x.get(), dx),
                "cudnnConvolutionBackwardData", where(v));
}

template <class T>
void model<T>::device_state::convolution_filter_gradient(node_id v, const T* x, const T* dy, T* dw) {
  const detail::convolution& c = *convolutions[v];
  const float one = 1, zero = 0;
  detail::check(cudnnConvolutionBackwardFilter(cudnn.get(), &one, c.x.get(), x, c.y.get(), dy, c.backward_filter.get(),
                                               c.backward_filter_algorithm, convolution_workspace.get(),
                                               c.chosen.backward_filter_workspace, &zero, c.w.get(), dw),
                "cudnnConvolutionBackwardFilter", where(v));
}

namespace detail {

// The GEMM `shape` (elements.hpp) with cuBLAS: C = op(A) · op(B).
void gemm(cublasHandle_t h, const elements::gemm_shape& shape, const float* a, const float* b, float* c,
          const std::string& context) {
  const float one = 1, zero = 0;
  check(cublasSgemm(h, shape.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, shape.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                    static_cast<int>(shape.m), static_cast<int>(shape.n), static_cast<int>(shape.k), &one, a,
                    static_cast<int>(shape.lda), b, static_cast<int>(shape.ldb), &zero, c, static_cast<int>(shape.ldc)),
        "cublasSgemm", context);
}

}  // namespace detail

template <class T>
void model<T>::device_state::linear_forward(node_id v, const T* x, const T* w, T* y) {
  const ops::op_info& o = host.op(v);
  detail::gemm(cublas.get(), elements::linear_output(o.rows, o.in_features, o.out_features), w, x, y, where(v));
}

template <class T>
void model<T>::device_state::linear_backward(node_id v, const T* x, const T* w, const T* dy, T* dx, T* dw) {
  const ops::op_info& o = host.op(v);
  detail::gemm(cublas.get(), elements::linear_weight_gradient(o.rows, o.in_features, o.out_features), x, dy, dw,
               where(v));
  if (dx)
    detail::gemm(cublas.get(), elements::linear_input_gradient(o.rows, o.in_features, o.out_features), w, dy, dx,
                 where(v));
}

template <class T>
model<T>::model(graph g, std::uint64_t seed, const model_options& options)
    : state_(std::make_unique<device_state>(std::move(g), seed, options)) {}

template <class T>
model<T>::~model() = default;

template <class T>
const graph& model<T>::network() const noexcept {
  return state_->host.network();
}
template <class T>
const ops::op_info& model<T>::op(node_id v) const noexcept {
  return state_->host.op(v);
}
template <class T>
std::span<const ops::op_info> model<T>::ops() const noexcept {
  return state_->host.ops();
}
template <class T>
std::uint64_t model<T>::seed() const noexcept {
  return state_->host.seed();
}
template <class T>
const model_options& model<T>::options() const noexcept {
  return state_->options;
}

template <class T>
void model<T>::set_input(std::string_view name, std::span<const T> values) {
  state_->host.set_input(name, values);
  const node_id v = *network().find(name);
  state_->upload(state_->inputs[v], values.data(), values.size_bytes());
}

template <class T>
void model<T>::set_labels(std::string_view name, std::span<const std::int64_t> labels) {
  state_->host.set_labels(name, labels);
  const node_id v = *network().find(name);
  state_->upload(state_->labels[v], labels.data(), labels.size_bytes());
}

template <class T>
void model<T>::randomize_inputs(std::uint64_t seed) {
  state_->host.randomize_inputs(seed);
  state_->upload_inputs();
}

template <class T>
std::span<const std::int64_t> model<T>::labels(node_id v) const noexcept {
  return state_->host.labels(v);
}

template <class T>
std::vector<T> model<T>::parameters(node_id v) const {
  std::vector<T> out(op(v).parameter_elements());
  state_->download(out.data(), state_->parameters[v], out.size() * sizeof(T));
  return out;
}

template <class T>
std::vector<T> model<T>::running_mean(node_id v) const {
  std::vector<T> out(op(v).kind == ops::op_kind::batch_norm ? static_cast<std::size_t>(op(v).norm.c) : 0);
  state_->download(out.data(), state_->running_mean[v], out.size() * sizeof(T));
  return out;
}

template <class T>
std::vector<T> model<T>::running_var(node_id v) const {
  std::vector<T> out(op(v).kind == ops::op_kind::batch_norm ? static_cast<std::size_t>(op(v).norm.c) : 0);
  state_->download(out.data(), state_->running_var[v], out.size() * sizeof(T));
  return out;
}

template <class T>
std::uint64_t model<T>::parameter_bytes() const noexcept {
  return state_->host.parameter_bytes();
}
template <class T>
std::uint64_t model<T>::input_bytes() const noexcept {
  return state_->host.input_bytes();
}
template <class T>
const model_memory& model<T>::memory() const noexcept {
  return state_->memory;
}
template <class T>
convolution_algorithms model<T>::algorithms(node_id v) const noexcept {
  return state_->convolutions[v] ? state_->convolutions[v]->chosen : convolution_algorithms{};
}

template class model<float>;

}  // namespace remat::cuda
