#pragma once

// Every public remat header includes this one first, so that a compiler in
// C++17 mode or older reports this line first, not an error at remat's first
// concept. MSVC reports its mode in _MSVC_LANG (__cplusplus stays 199711L
// without /Zc:__cplusplus).
#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) <= 201703L
#error "remat needs C++20: compile with -std=c++20 (MSVC: /std:c++20)"
#endif

#include <cstdio>
#include <cstdlib>

/// REMAT_ASSERT checks internal invariants (never user input: bad input throws).
/// On unless NDEBUG or REMAT_DISABLE_ASSERTS is defined; define REMAT_ASSERT
/// yourself before including remat to route failures elsewhere.
#ifndef REMAT_ASSERT
#if defined(NDEBUG) || defined(REMAT_DISABLE_ASSERTS)
#define REMAT_ASSERT(cond) ((void)0)
#else
#define REMAT_ASSERT(cond) \
  ((cond) ? (void)0 : ::remat::detail::assertion_failed(#cond, __FILE__, __LINE__))
#endif
#endif

namespace remat::detail {

[[noreturn]] inline void assertion_failed(const char* expression, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: remat internal assertion failed: %s\n", file, line, expression);
  std::abort();
}

}  // namespace remat::detail
