#pragma once

// Bytes the process holds through operator new, for measuring a solver's own
// memory: heap_meter.cpp replaces the global operator new and delete of the
// executable it is linked into and counts the usable size of every block
// (malloc_usable_size). Exact and deterministic, unlike the resident set,
// which also moves with pages glibc keeps or returns.

#include <cstddef>

namespace remat::bench {

/// Bytes allocated through operator new and not yet freed.
std::size_t heap_live() noexcept;

/// The largest heap_live() since the last reset_heap_peak().
std::size_t heap_peak() noexcept;

void reset_heap_peak() noexcept;

/// Allocations that would take heap_live() above `bytes` throw std::bad_alloc
/// (operator new's own failure), so a runaway solver stops with an error
/// instead of exhausting a shared machine. SIZE_MAX lifts the limit.
void set_heap_limit(std::size_t bytes) noexcept;

}  // namespace remat::bench
