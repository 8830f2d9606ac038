#pragma once
/// Enum <-> name through one table per enum, whose values are 0..N-1 in table order: to_string,
/// parsing and the "a, b or c" lists in error messages all read the same table.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace topoplan::detail {

template <class E, std::size_t N>
[[nodiscard]] const char* name_of(const std::array<const char*, N>& names, E e) {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : "?";
}

template <class E, std::size_t N>
[[nodiscard]] std::optional<E> from_name(const std::array<const char*, N>& names,
                                         std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

/// "a, b or c".
template <std::size_t N>
[[nodiscard]] std::string names_list(const std::array<const char*, N>& names) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i)
    out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + names[i];
  return out;
}

}  // namespace topoplan::detail
