#pragma once
/// Reading user JSON with errors that name the file, the JSON path and what was expected.
/// Private to the library: only the loaders include nlohmann/json.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topoplan::detail {

/// Parses text; a syntax error becomes an InputError naming the source, line and column.
[[nodiscard]] nlohmann::json parse_json(const std::string& text, const std::string& source);
/// Reads and parses a file; a missing or unreadable file is an InputError.
[[nodiscard]] nlohmann::json read_json_file(const std::string& path);
/// The largest input file read: far above any real input (the published runs file is 0.2 MiB).
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{256} << 20;
/// Reads a whole file of at most kMaxInputFileBytes; errors name the path as the user gave it.
[[nodiscard]] std::string read_text_file(const std::string& path);

/// Edit distance between two keys (insertions, deletions, substitutions; case-insensitive).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);
/// "unknown key, ignored" plus " (did you mean `x`?)" when a known key is within a third of
/// the key's length in edits.
[[nodiscard]] std::string unknown_key_message(std::string_view key,
                                              const std::vector<std::string_view>& known);

/// A position inside a parsed document: the node, its file and its JSON path.
class JsonCursor {
 public:
  JsonCursor(const nlohmann::json& node, std::string source, std::string path = "");

  [[nodiscard]] bool has(std::string_view key) const;
  [[nodiscard]] JsonCursor at(std::string_view key) const;  ///< required member
  [[nodiscard]] JsonCursor at(std::size_t index) const;     ///< array element
  [[nodiscard]] std::size_t array_size() const;             ///< requires an array
  [[nodiscard]] const nlohmann::json& node() const { return *node_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string path_of(std::string_view key) const;

  [[nodiscard]] std::string string(std::string_view key) const;
  [[nodiscard]] std::optional<std::string> opt_string(std::string_view key) const;
  [[nodiscard]] double positive(std::string_view key) const;
  [[nodiscard]] std::int64_t positive_int(std::string_view key) const;
  /// A finite number from lo to hi (physical ranges: every later product stays finite).
  [[nodiscard]] double number_in(std::string_view key, double lo, double hi) const;
  [[nodiscard]] double number_in_or(std::string_view key, double lo, double hi,
                                    double fallback) const;
  [[nodiscard]] std::int64_t int_at_least_or(std::string_view key, std::int64_t min,
                                             std::int64_t fallback) const;
  [[nodiscard]] bool boolean_or(std::string_view key, bool fallback) const;

  /// The one policy for keys a topoplan format does not know: a warning per key, naming the
  /// closest known key when one is near (a likely typo). "schema", "source" and "note" are
  /// known everywhere.
  void warn_unknown_keys(const std::vector<std::string_view>& known) const;

  [[noreturn]] void fail(std::string_view key, std::string_view expected) const;
  [[noreturn]] void fail_here(std::string_view what) const;

 private:
  [[nodiscard]] const nlohmann::json& member(std::string_view key) const;
  const nlohmann::json* node_;
  std::string source_;
  std::string path_;
};

}  // namespace topoplan::detail
