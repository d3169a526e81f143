#pragma once

/// \file
/// Element types and device profiles for the model zoo's cost estimates.
///
/// A device profile holds the peak arithmetic rate per element type and the
/// memory bandwidth the roofline time estimate divides by (docs/zoo.md, "Device
/// profiles", gives each number's source). The figures are vendor peaks: they
/// rank ops and plans, they do not predict wall-clock time.

#include <remat/config.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <remat/error.hpp>

namespace remat::zoo {

/// Element type of a tensor. Networks are built in f32, f16 or bf16; class
/// labels are always i64.
enum class dtype : std::uint8_t { f32, f16, bf16, i64 };

/// Bytes per element.
inline constexpr std::uint64_t size_of(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return 4;
    case dtype::f16: return 2;
    case dtype::bf16: return 2;
    case dtype::i64: return 8;
  }
  return 4;
}

/// "f32", "f16", "bf16" or "i64": the `dtype` attribute written on every node.
inline constexpr std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "f32";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
    case dtype::i64: return "i64";
  }
  return "f32";
}

/// Parses a network element type: "f32", "f16" or "bf16" (i64 is for labels
/// only). Nothing for anything else.
inline std::optional<dtype> parse_dtype(std::string_view text) noexcept {
  if (text == "f32") return dtype::f32;
  if (text == "f16") return dtype::f16;
  if (text == "bf16") return dtype::bf16;
  return std::nullopt;
}

/// Peak rates of one accelerator, as the roofline estimate uses them.
struct device_profile {
  std::string name;         ///< "h100", "a100", "rtx2080ti"
  std::string description;  ///< the exact part the numbers are for
  double f32_flops = 0;     ///< FLOP/s for f32 networks (CUDA cores, no TF32)
  double f16_flops = 0;     ///< FLOP/s for f16 networks (dense tensor cores)
  double bf16_flops = 0;    ///< FLOP/s for bf16 networks
  double bandwidth = 0;     ///< device memory bytes/s

  /// Peak FLOP/s for a network of element type `t` (i64 counts as f32).
  double flops(dtype t) const noexcept {
    switch (t) {
      case dtype::f16: return f16_flops;
      case dtype::bf16: return bf16_flops;
      case dtype::f32:
      case dtype::i64: return f32_flops;
    }
    return f32_flops;
  }
};

/// The built-in profiles, h100 first (the default).
inline const std::vector<device_profile>& device_profiles() {
  static const std::vector<device_profile> all = [] {
    std::vector<device_profile> p(3);
    p[0].name = "h100";
    p[0].description = "NVIDIA H100 SXM5 80 GB";
    p[0].f32_flops = 66.9e12;
    p[0].f16_flops = 989.4e12;
    p[0].bf16_flops = 989.4e12;
    p[0].bandwidth = 3.35e12;
    p[1].name = "a100";
    p[1].description = "NVIDIA A100 SXM4 80 GB";
    p[1].f32_flops = 19.5e12;
    p[1].f16_flops = 312e12;
    p[1].bf16_flops = 312e12;
    p[1].bandwidth = 2.039e12;
    // Turing has no bf16 arithmetic: bf16 runs at the f32 rate. Its f16 rate is
    // the GeForce tensor-core rate with f32 accumulation, as training uses.
    p[2].name = "rtx2080ti";
    p[2].description = "NVIDIA GeForce RTX 2080 Ti (reference clocks)";
    p[2].f32_flops = 13.45e12;
    p[2].f16_flops = 53.8e12;
    p[2].bf16_flops = 13.45e12;
    p[2].bandwidth = 616e9;
    return p;
  }();
  return all;
}

/// The profile called `name`. \throws remat::error naming the known profiles.
inline const device_profile& profile(std::string_view name) {
  for (const device_profile& p : device_profiles())
    if (p.name == name) return p;
  std::string known;
  for (const device_profile& p : device_profiles()) known += (known.empty() ? "" : ", ") + p.name;
  throw error("unknown device profile '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace remat::zoo
