#include "detail/json_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <vector>

#include "topoplan/error.hpp"

namespace topoplan::detail {
namespace {

std::string describe(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

}  // namespace

nlohmann::json parse_json(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 3, column
    // 5: syntax error ...": keep what follows the bracketed id. A number too large for a double
    // (out_of_range.406, found by fuzzing) is malformed input too.
    std::string what = e.what();
    auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    throw_input(source, "", "malformed JSON: " + what);
  }
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_input(path, "", "cannot open file");
  // Read in blocks up to the limit, so that a wrong file (a checkpoint given as --model, a device)
  // fails at once instead of filling the memory; pipes and process substitutions still work.
  std::string text;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    text.append(block.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes)
      throw_input(path, "",
                  fmt::format("larger than {} MiB; expected a topoplan input file (JSON or text)",
                              kMaxInputFileBytes >> 20));
  }
  if (in.bad()) throw_input(path, "", "cannot read file");
  return text;
}

nlohmann::json read_json_file(const std::string& path) {
  return parse_json(read_text_file(path), path);
}

JsonCursor::JsonCursor(const nlohmann::json& node, std::string source, std::string path)
    : node_(&node), source_(std::move(source)), path_(std::move(path)) {}

std::string JsonCursor::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      const std::size_t next = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

std::string unknown_key_message(std::string_view key, const std::vector<std::string_view>& known) {
  std::string_view best;
  std::size_t best_d = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (std::string_view k : known) {  // the first of equally close keys, in the listed order
    const std::size_t d = edit_distance(key, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (best.empty())  // a shortened key: "gemm_eff" for "gemm_efficiency.ampere"
    for (std::string_view k : known)
      if (key.size() >= 3 && k.size() > key.size() && k.substr(0, key.size()) == key) {
        best = k;
        break;
      }
  std::string msg = "unknown key, ignored";
  if (!best.empty()) msg += " (did you mean `" + std::string(best) + "`?)";
  return msg;
}

void JsonCursor::warn_unknown_keys(const std::vector<std::string_view>& known) const {
  if (!node_->is_object()) return;
  for (const auto& [key, value] : node_->items()) {
    if (key == "schema" || key == "source" || key == "note") continue;
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) warn_input(source_, path_of(key), unknown_key_message(key, known));
  }
}

void JsonCursor::fail(std::string_view key, std::string_view expected) const {
  std::string got =
      has(key) ? ", got " + describe(node_->at(std::string(key))) : ", but it is missing";
  throw_input(source_, path_of(key), "expected " + std::string(expected) + got);
}

void JsonCursor::fail_here(std::string_view what) const {
  throw_input(source_, path_.empty() ? "(top level)" : path_, std::string(what));
}

bool JsonCursor::has(std::string_view key) const {
  return node_->is_object() && node_->contains(std::string(key));
}

const nlohmann::json& JsonCursor::member(std::string_view key) const {
  if (!node_->is_object()) fail_here("expected an object, got " + describe(*node_));
  if (!has(key)) throw_input(source_, path_of(key), "required field is missing");
  return node_->at(std::string(key));
}

JsonCursor JsonCursor::at(std::string_view key) const {
  return JsonCursor(member(key), source_, path_of(key));
}

std::size_t JsonCursor::array_size() const {
  if (!node_->is_array()) fail_here("expected an array, got " + describe(*node_));
  return node_->size();
}

JsonCursor JsonCursor::at(std::size_t index) const {
  (void)array_size();
  return JsonCursor(node_->at(index), source_, path_ + "[" + std::to_string(index) + "]");
}

std::string JsonCursor::string(std::string_view key) const {
  const auto& v = member(key);
  if (!v.is_string() || v.get<std::string>().empty()) fail(key, "a non-empty string");
  return v.get<std::string>();
}

std::optional<std::string> JsonCursor::opt_string(std::string_view key) const {
  if (!has(key) || node_->at(std::string(key)).is_null()) return std::nullopt;
  return string(key);
}

double JsonCursor::positive(std::string_view key) const {
  const auto& v = member(key);
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    fail(key, "a positive number");
  return v.get<double>();
}

double JsonCursor::number_in(std::string_view key, double lo, double hi) const {
  const auto& v = member(key);
  if (lo > 0 && !(v.is_number() && v.get<double>() > 0)) fail(key, "a positive number");
  if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi))
    fail(key, fmt::format("a number from {:g} to {:g}", lo, hi));
  return v.get<double>();
}

double JsonCursor::number_in_or(std::string_view key, double lo, double hi, double fallback) const {
  if (!has(key)) return fallback;
  return number_in(key, lo, hi);
}

std::int64_t JsonCursor::positive_int(std::string_view key) const {
  if (!has(key)) throw_input(source_, path_of(key), "required field is missing");
  // A required field that is null is no value: the fallback of int_at_least_or must not apply.
  if (node_->at(std::string(key)).is_null()) fail(key, "a positive integer");
  return int_at_least_or(key, 1, 0);
}

std::int64_t JsonCursor::int_at_least_or(std::string_view key, std::int64_t min,
                                         std::int64_t fallback) const {
  if (!has(key) || node_->at(std::string(key)).is_null()) return fallback;  // null: unset (HF)
  const auto& v = member(key);
  bool ok = v.is_number_integer() ||
            (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (ok) {
    double d = v.get<double>();
    ok = d >= static_cast<double>(min) && d < 9.0e15;
  }
  if (!ok) fail(key, min == 1 ? "a positive integer" : "an integer >= " + std::to_string(min));
  return static_cast<std::int64_t>(v.get<double>());
}

bool JsonCursor::boolean_or(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto& v = member(key);
  if (!v.is_boolean()) fail(key, "true or false");
  return v.get<bool>();
}

}  // namespace topoplan::detail
