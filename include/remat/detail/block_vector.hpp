#pragma once

#include <bit>
#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace remat::detail {

/// An append-only sequence stored in blocks that double in size, so appending
/// never moves what is stored. The lower-set programme appends millions of
/// stages and labels; a doubling std::vector copies all of them at every
/// growth and touches a fresh buffer each time, and on the 2,053-node
/// ResNet-like graph that copying and its page faults took about half of the
/// solve. A small search allocates only a small first block. Indexing costs
/// a bit scan and a load more than a vector's.
///
/// Blocks of 2 MiB and more start on a 2 MiB boundary and, on Linux, ask for
/// transparent huge pages: a first touch faults once per 2 MiB instead of 512
/// times, and the programme's scattered reads of labels and stages miss the
/// TLB far less (measured in docs/results-solvers.md).
template <class T, std::size_t FirstBlockBits = 8>
class block_vector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>,
                "blocks are allocated uninitialised and filled by copy");

 public:
  class const_iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;

    const_iterator() = default;
    const_iterator(const block_vector* owner, std::size_t index) : owner_(owner), index_(index) {}
    reference operator*() const { return (*owner_)[index_]; }
    pointer operator->() const { return &(*owner_)[index_]; }
    const_iterator& operator++() { ++index_; return *this; }
    const_iterator operator++(int) { const_iterator before = *this; ++index_; return before; }
    const_iterator& operator--() { --index_; return *this; }
    const_iterator operator--(int) { const_iterator before = *this; --index_; return before; }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.index_ == b.index_; }

   private:
    const block_vector* owner_ = nullptr;
    std::size_t index_ = 0;
  };

  void push_back(const T& value) {
    if (next_ == block_end_) open_block();
    *next_++ = value;
    ++size_;
  }

  T& operator[](std::size_t i) noexcept {
    const std::size_t b = block_of(i);
    return blocks_[b][i - block_start(b)];
  }
  const T& operator[](std::size_t i) const noexcept {
    const std::size_t b = block_of(i);
    return blocks_[b][i - block_start(b)];
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /// Empties the sequence and keeps its blocks for the next appends.
  void clear() noexcept {
    size_ = 0;
    next_ = block_end_ = nullptr;
  }

  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }
  std::reverse_iterator<const_iterator> rbegin() const { return std::reverse_iterator(end()); }
  std::reverse_iterator<const_iterator> rend() const { return std::reverse_iterator(begin()); }

 private:
  // Block b holds 2^(FirstBlockBits + b) elements from index (2^b − 1) · 2^FirstBlockBits.
  static std::size_t block_of(std::size_t i) noexcept {
    return static_cast<std::size_t>(std::bit_width((i >> FirstBlockBits) + 1)) - 1;
  }
  static std::size_t block_start(std::size_t b) noexcept { return ((std::size_t{1} << b) - 1) << FirstBlockBits; }
  static std::size_t block_length(std::size_t b) noexcept { return std::size_t{1} << (FirstBlockBits + b); }

  // Called when size_ is the first index of a block.
  void open_block() {
    const std::size_t b = block_of(size_);
    if (b == blocks_.size()) {
      const std::size_t bytes = block_length(b) * sizeof(T);
      const std::size_t alignment = bytes >= huge_page ? huge_page : alignof(T);
      block_pointer block(static_cast<T*>(::operator new(bytes, std::align_val_t(alignment))),
                          block_deleter{alignment});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
      if (alignment == huge_page) (void)::madvise(block.get(), bytes, MADV_HUGEPAGE);  // advice: no error to act on
#endif
      blocks_.push_back(std::move(block));
    }
    next_ = blocks_[b].get();
    block_end_ = next_ + block_length(b);
  }

  static constexpr std::size_t huge_page = std::size_t{2} << 20;
  struct block_deleter {
    std::size_t alignment;
    void operator()(T* block) const noexcept { ::operator delete(block, std::align_val_t(alignment)); }
  };
  using block_pointer = std::unique_ptr<T[], block_deleter>;

  std::vector<block_pointer> blocks_;
  std::size_t size_ = 0;
  T* next_ = nullptr;
  T* block_end_ = nullptr;
};

}  // namespace remat::detail
