#pragma once

// How bench_solvers times one solve and measures its memory.
//
// Time: the solve runs several times and the median is kept, because the
// machines these numbers come from are shared: process CPU time
// (CLOCK_PROCESS_CPUTIME_ID; the solvers are single-threaded) is what the
// other jobs disturb least, wall time is kept beside it.
//
// Memory, from the first run only: the heap high-water mark above what was
// live before the solve (heap_meter.hpp: every byte the solver holds through
// operator new, exact), and the growth of the resident set's high-water mark
// (VmHWM) over the solve, after returning free heap pages to the kernel
// (malloc_trim) and resetting the mark (writing 5 to /proc/self/clear_refs).

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "heap_meter.hpp"

namespace remat::bench {

struct measure_options {
  /// Fast solves are re-run until this much CPU time is spent.
  double min_total_seconds = 0.1;
  /// Solves faster than this run at least three times; slower ones once.
  double repeat_below_seconds = 1.0;
  std::size_t max_runs = 1000;
  /// Bytes a solve may hold above what was live before it (heap_meter.hpp).
  std::size_t heap_budget = std::numeric_limits<std::size_t>::max();
};

struct measurement {
  std::size_t runs = 0;
  double cpu_median = 0;  ///< seconds
  double wall_median = 0;
  double cpu_min = 0;
  double cpu_max = 0;
  std::size_t heap_peak = 0;               ///< bytes above the heap live before the first run
  std::optional<std::size_t> rss_growth;   ///< bytes; empty where /proc/self/clear_refs is not writable
  bool out_of_memory = false;              ///< the first run went over heap_budget
};

inline double process_cpu_seconds() noexcept {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// A "VmXXX:  123 kB" line of /proc/self/status, in bytes.
inline std::optional<std::size_t> proc_status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  std::size_t kib = 0;
  while (status >> key) {
    if (key == field + ":") {
      if (status >> kib) return kib * 1024;
      return std::nullopt;
    }
    status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

/// Resets VmHWM to the current resident set; false where the kernel refuses.
inline bool reset_resident_peak() {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// A timer the measurement may stop around its bookkeeping and re-runs.
struct untimed {
  void pause() {}
  void resume() {}
};

/// Runs `solve` (a callable taking no arguments) as measure_options says.
/// `repeat(first_run_cpu_seconds)` may veto re-runs (e.g. of a solve that
/// stopped at its time limit, whose time is the limit). `timer` runs during
/// the first run only, so that an enclosing timer (Google Benchmark's)
/// measures one solve.
template <class Solve, class Repeat, class Timer = untimed>
measurement measure(Solve&& solve, Repeat&& repeat, const measure_options& options, Timer&& timer = {}) {
  constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();
  measurement m;
  std::vector<double> cpu, wall;
  timer.pause();
  const std::optional<std::size_t> resident_now = reset_resident_peak() ? proc_status_bytes("VmRSS") : std::nullopt;
  const bool resident = resident_now.has_value();
  const std::size_t resident_before = resident_now.value_or(0);
  reset_heap_peak();
  const std::size_t live_before = heap_live();
  set_heap_limit(options.heap_budget > unlimited - live_before ? unlimited : live_before + options.heap_budget);
  auto run = [&] {
    const double cpu_start = process_cpu_seconds();
    const auto wall_start = std::chrono::steady_clock::now();
    solve();
    cpu.push_back(process_cpu_seconds() - cpu_start);
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count());
  };
  timer.resume();
  try {
    run();
  } catch (const std::bad_alloc&) {
    set_heap_limit(unlimited);
    m.out_of_memory = true;
    m.heap_peak = heap_peak() - live_before;
    return m;
  }
  timer.pause();
  set_heap_limit(unlimited);
  m.heap_peak = heap_peak() - live_before;
  if (const std::optional<std::size_t> resident_peak = resident ? proc_status_bytes("VmHWM") : std::nullopt)
    m.rss_growth = *resident_peak > resident_before ? *resident_peak - resident_before : 0;
  if (repeat(cpu.front())) {
    const std::size_t least = cpu.front() < options.repeat_below_seconds ? 3 : 1;
    double total = cpu.front();
    while (cpu.size() < options.max_runs && (cpu.size() < least || total < options.min_total_seconds)) {
      run();
      total += cpu.back();
    }
  }
  timer.resume();
  m.runs = cpu.size();
  m.cpu_median = median(cpu);
  m.wall_median = median(wall);
  m.cpu_min = *std::min_element(cpu.begin(), cpu.end());
  m.cpu_max = *std::max_element(cpu.begin(), cpu.end());
  return m;
}

}  // namespace remat::bench
