#pragma once

/// \file
/// remat::cuda::model: a remat::graph made runnable on a CUDA device. The ops
/// are the op model's that the CPU runtime runs too (ops::parse_op: one parser,
/// one op contract), and so are the initial parameters, batch-norm statistics
/// and synthetic inputs: an ops::host_model<T> built with the same seed is
/// uploaded, so a CUDA model and a CPU model of one graph and seed start from
/// the same bits. On the device it holds parameters, running statistics,
/// inputs, the cuDNN and cuBLAS handles, one convolution workspace sized at
/// construction (the largest the chosen algorithms need) and cuBLAS's
/// workspace: nothing is allocated later.
///
/// Host-only C++: no CUDA header is included, so g++-compiled code can use it.
/// Link remat_cuda.

#include <remat/config.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/ops/convolution.hpp>
#include <remat/ops/op.hpp>

namespace remat::cuda {

/// How a model's convolutions are run.
struct model_options {
  /// Only algorithms cuDNN reports deterministic (every custom kernel and
  /// cuBLAS's GEMMs on one stream are deterministic anyway): a plan then
  /// changes no bit of the gradients, as on the CPU.
  bool deterministic = false;
  /// Let cuDNN convolutions use TF32 tensor cores (PyTorch's default,
  /// torch.backends.cudnn.allow_tf32). Off: FMA math only, which keeps float32
  /// results within float32 rounding of the CPU runtime's.
  bool tf32 = false;
  /// The most workspace one convolution algorithm may take.
  std::uint64_t workspace_limit = std::uint64_t{1} << 30;
  /// How convolution algorithms are chosen among those the options allow.
  enum class search {
    /// cuDNN's heuristic ranking (cudnnGetConvolution*Algorithm_v7), as
    /// PyTorch with torch.backends.cudnn.benchmark off: the same choice on
    /// every run.
    heuristic,
    /// cuDNN times every candidate once per distinct convolution and process
    /// (cudnnFindConvolution*Algorithm), as torch.backends.cudnn.benchmark:
    /// faster steps where the heuristics miss (a 3-channel first layer),
    /// slower construction, and a choice that may differ between runs.
    measured,
  };
  search algorithm_search = search::heuristic;
};

/// The algorithms chosen for one convolution (model_options::algorithm_search), as cudnnConvolution*Algo_t values, and their workspaces.
struct convolution_algorithms {
  int forward = -1, backward_data = -1, backward_filter = -1;
  std::uint64_t forward_workspace = 0, backward_data_workspace = 0, backward_filter_workspace = 0;
};

/// What a model holds on the device, in bytes as allocated.
struct model_memory {
  std::uint64_t parameters = 0;          ///< every node's parameters, each at an aligned offset
  std::uint64_t inputs = 0;              ///< graph inputs' data and labels
  std::uint64_t running_statistics = 0;  ///< batch-norm running means and variances
  std::uint64_t convolution_workspace = 0;  ///< cuDNN's, the most any chosen algorithm needs
  std::uint64_t gemm_workspace = 0;      ///< handed to cuBLAS (cublasSetWorkspace)
  /// Outside check: cudaMemGetInfo's free bytes before construction minus
  /// after (library state and allocation granularity included).
  std::uint64_t device_taken = 0;

  std::uint64_t total() const noexcept {
    return parameters + inputs + running_statistics + convolution_workspace + gemm_workspace;
  }
};

/// The output shape [n, k, oh, ow] cuDNN's descriptors give convolution g,
/// computed without a device; a model refuses a node where it differs from the
/// graph's. \throws remat::error when cuDNN refuses the geometry.
std::vector<std::int64_t> convolution_output_shape(const ops::conv2d_geometry& g);

/// A graph runnable on device 0, with parameters, running statistics and inputs
/// there. T is float.
template <class T>
class model {
 public:
  /// Parses every node (ops::parse_op) before touching the device, so a bad
  /// graph is refused, naming the node, with or without one; then uploads the
  /// initial state of ops::host_model<T>(g, seed) and picks convolution algorithms.
  /// \throws remat::error naming the first bad node, or saying there is no
  /// device and why; cuda::out_of_memory naming what did not fit.
  explicit model(graph g, std::uint64_t seed = 0, const model_options& options = {});
  ~model();
  model(const model&) = delete;
  model& operator=(const model&) = delete;

  const graph& network() const noexcept;
  const ops::op_info& op(node_id v) const noexcept;
  std::span<const ops::op_info> ops() const noexcept;
  std::uint64_t seed() const noexcept;
  const model_options& options() const noexcept;

  /// As ops::host_model's, then copied to the device (synchronously: never while a
  /// step runs). \throws remat::error for a wrong name or size.
  void set_input(std::string_view name, std::span<const T> values);
  void set_labels(std::string_view name, std::span<const std::int64_t> labels);
  /// The same data and labels as ops::host_model<T>::randomize_inputs(seed).
  void randomize_inputs(std::uint64_t seed);
  /// Class labels of an i64 input, as last set (host copy: the executor checks
  /// them against the loss before a step).
  std::span<const std::int64_t> labels(node_id v) const noexcept;

  /// Copies from the device after the model's stream drains.
  std::vector<T> parameters(node_id v) const;
  std::vector<T> running_mean(node_id v) const;
  std::vector<T> running_var(node_id v) const;

  /// As the simulator counts them: elements × sizeof(T), labels at 8 bytes.
  std::uint64_t parameter_bytes() const noexcept;
  std::uint64_t input_bytes() const noexcept;
  const model_memory& memory() const noexcept;
  /// The convolution algorithms chosen for conv2d node v (all −1 for others).
  convolution_algorithms algorithms(node_id v) const noexcept;

  /// The device-side state (CUDA types; defined in backends/cuda/src).
  struct device_state;
  device_state& state() noexcept { return *state_; }

 private:
  std::unique_ptr<device_state> state_;
};

extern template class model<float>;

}  // namespace remat::cuda
