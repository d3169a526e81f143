#pragma once

/// \file
/// node_set: a fixed-size set of node ids stored as a bitset (one bit per
/// node), with word-parallel set algebra and hashing. Lower sets, kept sets
/// and stage masks all use it.

#include <remat/config.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

namespace remat {

class node_set {
 public:
  using word = std::uint64_t;
  static constexpr std::size_t word_bits = 64;

  node_set() = default;
  /// An empty set over ids [0, universe).
  explicit node_set(std::size_t universe) : universe_(universe), words_((universe + 63) / 64, 0) {}
  node_set(std::size_t universe, std::initializer_list<std::size_t> ids) : node_set(universe) {
    for (std::size_t id : ids) insert(id);
  }

  std::size_t universe() const noexcept { return universe_; }
  bool contains(std::size_t id) const noexcept { return (words_[id / 64] >> (id % 64)) & 1U; }
  void insert(std::size_t id) noexcept { words_[id / 64] |= word{1} << (id % 64); }
  void erase(std::size_t id) noexcept { words_[id / 64] &= ~(word{1} << (id % 64)); }
  void set(std::size_t id, bool value) noexcept { value ? insert(id) : erase(id); }

  /// Number of members. O(universe / 64).
  std::size_t count() const noexcept {
    std::size_t total = 0;
    for (word w : words_) total += static_cast<std::size_t>(std::popcount(w));
    return total;
  }
  bool empty() const noexcept {
    return std::all_of(words_.begin(), words_.end(), [](word w) { return w == 0; });
  }

  /// True when every member of *this is in `other`.
  bool is_subset_of(const node_set& other) const noexcept {
    for (std::size_t i = 0; i < words_.size(); ++i)
      if (words_[i] & ~other.words_[i]) return false;
    return true;
  }
  bool intersects(const node_set& other) const noexcept {
    for (std::size_t i = 0; i < words_.size(); ++i)
      if (words_[i] & other.words_[i]) return true;
    return false;
  }

  node_set& operator|=(const node_set& other) noexcept {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
    return *this;
  }
  node_set& operator&=(const node_set& other) noexcept {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] &= other.words_[i];
    return *this;
  }
  /// Set difference: removes every member of `other`.
  node_set& operator-=(const node_set& other) noexcept {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] &= ~other.words_[i];
    return *this;
  }
  friend node_set operator|(node_set a, const node_set& b) noexcept { return a |= b; }
  friend node_set operator&(node_set a, const node_set& b) noexcept { return a &= b; }
  friend node_set operator-(node_set a, const node_set& b) noexcept { return a -= b; }
  friend bool operator==(const node_set&, const node_set&) = default;

  /// Calls f(id) for every member in increasing order.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < words_.size(); ++i) {
      word w = words_[i];
      while (w) {
        f(i * 64 + static_cast<std::size_t>(std::countr_zero(w)));
        w &= w - 1;
      }
    }
  }

  /// Members in increasing order.
  std::vector<std::size_t> members() const {
    std::vector<std::size_t> out;
    for_each([&](std::size_t id) { out.push_back(id); });
    return out;
  }

  const std::vector<word>& words() const noexcept { return words_; }

  std::size_t hash() const noexcept {
    std::size_t h = 1469598103934665603ULL;
    for (word w : words_) h = (h ^ static_cast<std::size_t>(w)) * 1099511628211ULL + (h >> 29);
    return h;
  }

 private:
  std::size_t universe_ = 0;
  std::vector<word> words_;
};

}  // namespace remat

template <>
struct std::hash<remat::node_set> {
  std::size_t operator()(const remat::node_set& s) const noexcept { return s.hash(); }
};
