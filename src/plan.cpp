#include "topoplan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "detail/names.hpp"
#include "topoplan/error.hpp"

namespace topoplan {

namespace {
constexpr std::array<const char*, kDims> kDimNames{"tp", "cp", "ep", "dp", "pp"};
constexpr std::array<const char*, 3> kRecomputeNames{"none", "selective", "full"};
}  // namespace

const char* to_string(Dim d) { return detail::name_of(kDimNames, d); }

std::int64_t StageLayers::max() const { return std::max({first, middle, last}); }

StageLayers stage_layers(std::int64_t layers, int pp) {
  if (pp <= 1 || layers % pp == 0) {
    const std::int64_t n = pp <= 1 ? layers : layers / pp;
    return {n, n, n};
  }
  const std::int64_t ceil = (layers + pp - 1) / pp;
  if (pp == 2) return {layers - ceil, 0, ceil};
  // Middle stages as full as possible; the first and last share what is left, each at least 1.
  for (std::int64_t middle = ceil; middle >= 1; --middle) {
    const std::int64_t rest = layers - (pp - 2) * middle;
    if (rest < 2 || rest > 2 * ceil) continue;
    return {rest / 2, middle, rest - rest / 2};
  }
  return {ceil, ceil, ceil};  // unreachable for pp <= layers
}

std::string degrees_string(const Plan& p, bool with_dp) {
  std::string out = fmt::format("tp {}", p[Dim::tp]);
  for (Dim d : {Dim::cp, Dim::ep})
    if (p[d] > 1) out += fmt::format(" {} {}", to_string(d), p[d]);
  out += fmt::format(" pp {}", p[Dim::pp]);
  if (with_dp) out += fmt::format(" dp {}", p[Dim::dp]);
  return out;
}

const char* to_string(Recompute r) { return detail::name_of(kRecomputeNames, r); }

Recompute parse_recompute(const std::string& s, const std::string& what) {
  if (auto r = detail::from_name<Recompute>(kRecomputeNames, s)) return *r;
  throw_input(what, "",
              fmt::format("expected {}, got '{}'", detail::names_list(kRecomputeNames), s));
}

std::int64_t Plan::world() const {
  return static_cast<std::int64_t>((*this)[Dim::tp]) * (*this)[Dim::cp] * (*this)[Dim::dp] *
         (*this)[Dim::pp];
}

std::string order_string(const Order& o) {
  std::string s;
  for (Dim d : o) {
    if (!s.empty()) s += '-';
    s += to_string(d);
  }
  return s;
}

std::string short_order_string(const Plan& p) {
  std::string s;
  for (Dim d : p.order) {
    if (p[d] == 1) continue;
    if (!s.empty()) s += '-';
    s += to_string(d);
  }
  return s.empty() ? "single" : s;
}

bool same_layout(const Plan& p, const Order& other) {
  int i = 0, j = 0;
  while (true) {
    while (i < kDims && p[p.order[i]] == 1) ++i;
    while (j < kDims && p[other[j]] == 1) ++j;
    if (i == kDims || j == kDims) return i == j;
    if (p.order[i++] != other[j++]) return false;
  }
}

Order parse_order(const std::string& s, const std::string& what) {
  Order out{};
  DimArray<bool> seen{};
  int n = 0;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find('-', start);
    if (end == std::string::npos) end = s.size();
    std::string tok = s.substr(start, end - start);
    const std::optional<Dim> found = detail::from_name<Dim>(kDimNames, tok);
    if (!found)
      throw_input(what, "",
                  fmt::format("expected dimensions tp, cp, ep, dp, pp joined by '-', got '{}'", s));
    if (seen[*found]) throw_input(what, "", fmt::format("'{}' names {} twice", s, tok));
    seen[*found] = true;
    out[n++] = *found;
    start = end + 1;
  }
  for (Dim d : kDefaultOrder)
    if (!seen[d]) out[n++] = d;
  return out;
}

}  // namespace topoplan
