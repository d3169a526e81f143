#pragma once

/// \file
/// remat::memory_ceiling: how much memory a search may take. The ceiling is a
/// number of bytes the process's resident memory may grow by from when the
/// ceiling is set; searches see it through their time_budget, which expires
/// once the ceiling is passed, so every search stops there as it stops at its
/// deadline: with the best plan it has and the reason (`reached()`).
///
/// Resident memory is read from /proc/self/statm (Linux) at most once a
/// millisecond (cost: docs/algorithms.md). It counts what the process holds, heap
/// and all. Setting a ceiling first hands the allocator's free memory back to
/// the system (glibc's malloc_trim), so what the search allocates shows as
/// growth rather than filling memory freed before it. Between two reads a search can
/// allocate what one millisecond of its work allocates; past the ceiling it
/// also builds and simulates its plan (linear in the graph).

#include <remat/config.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace remat {

class memory_ceiling {
 public:
  using clock = std::chrono::steady_clock;

  /// A ceiling `bytes` above what the process holds now.
  explicit memory_ceiling(std::uint64_t bytes) noexcept : bytes_(bytes), start_(trimmed_resident_bytes()) {}

  /// Whether this platform can measure the process's memory (Linux).
  static bool supported() noexcept { return resident_bytes().has_value(); }

  /// The process's resident memory now, if the platform says.
  static std::optional<std::uint64_t> resident_bytes() noexcept {
#if defined(__linux__)
    const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    char text[128];
    const ssize_t got = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (got <= 0) return std::nullopt;
    text[got] = '\0';
    // "size resident shared ...", in pages.
    const char* p = text;
    while (*p >= '0' && *p <= '9') ++p;
    if (*p != ' ') return std::nullopt;
    ++p;
    std::uint64_t pages = 0;
    if (*p < '0' || *p > '9') return std::nullopt;
    while (*p >= '0' && *p <= '9') pages = pages * 10 + static_cast<std::uint64_t>(*p++ - '0');
    return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
#else
    return std::nullopt;
#endif
  }

  std::uint64_t bytes() const noexcept { return bytes_; }
  /// What the process held when the ceiling was set.
  std::uint64_t start() const noexcept { return start_; }
  /// The most the process was seen to hold above start() (bytes).
  std::uint64_t most_seen() const noexcept { return most_seen_; }
  /// Whether a search ran into the ceiling (it stays reached).
  bool reached() const noexcept { return reached_; }

  /// Whether the ceiling is passed, reading the process's memory when the
  /// last read is a millisecond old.
  bool exceeded(clock::time_point now) noexcept {
    if (reached_) return true;
    if (now - last_read_ < std::chrono::milliseconds(1)) return false;
    last_read_ = now;
    const std::uint64_t held = resident_bytes().value_or(start_);
    const std::uint64_t grown = held > start_ ? held - start_ : 0;
    if (grown > most_seen_) most_seen_ = grown;
    reached_ = grown > bytes_;
    return reached_;
  }

 private:
  static std::uint64_t trimmed_resident_bytes() noexcept {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
    return resident_bytes().value_or(0);
  }

  std::uint64_t bytes_;
  std::uint64_t start_;
  std::uint64_t most_seen_ = 0;
  clock::time_point last_read_{};
  bool reached_ = false;
};

}  // namespace remat
