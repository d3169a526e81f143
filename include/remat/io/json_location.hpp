#pragma once

/// \file
/// Finds where in a JSON text a given path lies, for error messages that name
/// a line. Used only after an error is found, so reading stays one fast pass.

#include <remat/config.hpp>

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace remat::io {

/// A step of a path into a JSON document: an object key or an array index.
using json_path = std::vector<std::variant<std::string, std::size_t>>;

struct text_location {
  std::size_t line = 0;    ///< 1-based; 0 when unknown
  std::size_t column = 0;  ///< 1-based; 0 when unknown
};

/// Line and column of byte `offset` in `text`.
inline text_location location_of_offset(std::string_view text, std::size_t offset) {
  text_location where{1, 1};
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++where.line;
      where.column = 1;
    } else {
      ++where.column;
    }
  }
  return where;
}

namespace detail {

// An input iterator over the text that publishes how far the parser has read.
struct tracking_iterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  const char* at = nullptr;
  const char** cursor = nullptr;

  reference operator*() const { return *at; }
  tracking_iterator& operator++() {
    ++at;
    *cursor = at;
    return *this;
  }
  tracking_iterator operator++(int) {
    tracking_iterator old = *this;
    ++*this;
    return old;
  }
  friend bool operator==(const tracking_iterator& a, const tracking_iterator& b) { return a.at == b.at; }
  friend bool operator!=(const tracking_iterator& a, const tracking_iterator& b) { return a.at != b.at; }
};

class path_locator : public nlohmann::json_sax<nlohmann::json> {
 public:
  path_locator(const json_path& target, const char** cursor) : target_(target), cursor_(cursor) {}

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    return !hit();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

  bool found() const noexcept { return found_ != nullptr; }
  const char* found_at() const noexcept { return found_; }

 private:
  struct frame {
    bool array;
    std::size_t index = 0;
    std::string key;
  };

  // The path of the value about to start: one step per open container.
  bool at_target() const {
    if (frames_.size() != target_.size()) return false;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const frame& f = frames_[i];
      const auto& want = target_[i];
      if (f.array ? (!std::holds_alternative<std::size_t>(want) || std::get<std::size_t>(want) != f.index)
                  : (!std::holds_alternative<std::string>(want) || std::get<std::string>(want) != f.key))
        return false;
    }
    return true;
  }
  bool hit() {
    if (!at_target()) return false;
    found_ = *cursor_;
    return true;
  }
  void advance() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  bool value() {
    if (hit()) return false;
    advance();
    return true;
  }
  bool open(bool array) {
    if (hit()) return false;
    frames_.push_back({array, 0, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    advance();
    return true;
  }

  const json_path& target_;
  const char** cursor_;
  std::vector<frame> frames_;
  const char* found_ = nullptr;
};

}  // namespace detail

/// Where `path` lies in `text` (an object member's key, or an array element's
/// first character); line 0 when the path is not in the text.
inline text_location locate(std::string_view text, const json_path& path) {
  const char* cursor = text.data();
  detail::path_locator locator(path, &cursor);
  detail::tracking_iterator first{text.data(), &cursor};
  detail::tracking_iterator last{text.data() + text.size(), &cursor};
  nlohmann::json::sax_parse(first, last, &locator);
  if (!locator.found()) return {};
  return location_of_offset(text, static_cast<std::size_t>(locator.found_at() - text.data()));
}

}  // namespace remat::io
