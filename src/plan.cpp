#include "topoplan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "detail/names.hpp"
#include "topoplan/error.hpp"
#include "topoplan/job.hpp"

namespace topoplan {

namespace {
constexpr std::array<const char*, kDims> kDimNames{"tp", "cp", "ep", "dp", "pp"};
constexpr std::array<const char*, 4> kRecomputeNames{"none", "selective", "full", "selective-op"};
}  // namespace

const char* to_string(Dim d) { return detail::name_of(kDimNames, d); }

std::int64_t StageLayers::max() const { return std::max({first, middle, last}); }

std::optional<StageLayers> pipeline_split(std::int64_t layers, int pp, int vpp, bool flexible) {
  const bool layout = flexible && vpp > 1 && pp > 1;
  // A layout may leave the embedding's chunk and the loss's without layers.
  if (pp < 1 || vpp < 1 || layers + (layout ? 2 : 0) < static_cast<std::int64_t>(pp) * vpp)
    return std::nullopt;
  if (layout) {
    // The split without a layout string when there is one (its first stage is the lighter),
    // else the vpp-1 split.
    if (auto classic = pipeline_split(layers, pp, vpp)) return classic;
    // The first and last stages may leave one chunk to the embedding or the loss alone (as
    // Megatron-core's layout counts them: llama 3.1 405B's 126 layers at pp 16, vpp 8).
    auto s = pipeline_split(layers, pp, 1);
    if (!s || s->first < vpp - 1 || s->last < vpp - 1 || (pp > 2 && s->middle < vpp))
      return std::nullopt;
    return s;
  }
  if (layers % (static_cast<std::int64_t>(pp) * vpp) == 0) {
    const std::int64_t n = layers / pp;
    return StageLayers{n, n, n};
  }
  if (pp == 1) return std::nullopt;
  const std::int64_t v = vpp;
  // First and last share `rest`: the first the smaller multiple of vpp, each at least vpp and
  // at most the middle stages' count.
  auto share = [&](std::int64_t rest, std::int64_t middle,
                   std::int64_t cap) -> std::optional<StageLayers> {
    if (rest % v != 0) return std::nullopt;
    const std::int64_t first = rest / 2 / v * v, last = rest - first;
    if (first < v || last > cap) return std::nullopt;
    return StageLayers{first, middle, last};
  };
  const std::int64_t ceil = (layers + pp - 1) / pp;
  if (pp == 2) return share(layers, 0, layers);
  // The fewest middle layers (a multiple of vpp, at least layers / pp) that leave a valid rest;
  // failing that (without interleaving, few layers per stage), fewer middle layers, the first
  // and last stages taking more (the largest middle count that works).
  const std::int64_t least = (ceil + v - 1) / v * v;
  for (std::int64_t middle = least; (pp - 2) * middle + 2 * v <= layers; middle += v)
    if (auto s = share(layers - (pp - 2) * middle, middle, middle)) return s;
  for (std::int64_t middle = least - 1; v == 1 && middle >= 1; --middle)
    if (auto s = share(layers - (pp - 2) * middle, middle, layers)) return s;
  return std::nullopt;
}

std::int64_t chunk_layers(std::int64_t stage_layers, int vpp, int chunk) {
  return stage_layers / vpp + (chunk < stage_layers % vpp ? 1 : 0);
}

StageLayers stage_layers(std::int64_t layers, int pp) {
  return pipeline_split(layers, pp, 1).value_or(StageLayers{layers, layers, layers});
}

StageLayers split_of(const Plan& p, std::int64_t layers) {
  return plan_split(p, layers).value_or(stage_layers(layers, p[Dim::pp]));
}

std::optional<StageLayers> plan_split(const Plan& p, std::int64_t layers) {
  const int pp = p[Dim::pp];
  if (!p.stage_layers.empty()) {
    const std::int64_t v = p.vpp;
    std::int64_t sum = 0, middle = 0;
    if (static_cast<int>(p.stage_layers.size()) != pp) return std::nullopt;
    for (std::size_t i = 0; i < p.stage_layers.size(); ++i) {
      const std::int64_t n = p.stage_layers[i];
      // A first or last stage of vpp - 1 layers leaves a chunk to the embedding or the loss
      // alone; never a stage without layers.
      const bool end = v > 1 && (i == 0 || i + 1 == p.stage_layers.size());
      if (n < (p.flexible_layout && end ? v - 1 : v) || (!p.flexible_layout && n % v != 0))
        return std::nullopt;
      sum += n;
      if (i > 0 && i + 1 < p.stage_layers.size()) middle = std::max(middle, n);
    }
    if (sum != layers) return std::nullopt;
    return StageLayers{p.stage_layers.front(), middle, p.stage_layers.back()};
  }
  if (!sets_first_last_split(p)) return pipeline_split(layers, pp, p.vpp, p.flexible_layout);
  const std::int64_t f = p.first_stage_layers, l = p.last_stage_layers, v = p.vpp;
  // Each stage's layers: a multiple of vpp, or (flexible layout) at least vpp, the first and last
  // at least vpp - 1 (one chunk the embedding's or the loss's alone).
  auto fits = [&](std::int64_t n) { return p.flexible_layout ? n >= v : n >= v && n % v == 0; };
  auto end_fits = [&](std::int64_t n) {
    return fits(n) || (p.flexible_layout && v > 1 && n == v - 1);
  };
  if (pp < 2 || !end_fits(f) || !end_fits(l)) return std::nullopt;
  if (pp == 2) {
    if (f + l != layers) return std::nullopt;
    return StageLayers{f, 0, l};
  }
  const std::int64_t rest = layers - f - l;
  if (rest < (pp - 2) * v || rest % (pp - 2) != 0 || !fits(rest / (pp - 2))) return std::nullopt;
  return StageLayers{f, rest / (pp - 2), l};
}

std::int64_t layers_on_stage(const Plan& p, const StageLayers& split, int i) {
  if (!p.stage_layers.empty()) return p.stage_layers[static_cast<std::size_t>(i)];
  return i == 0 ? split.first : i == p[Dim::pp] - 1 ? split.last : split.middle;
}

std::string split_string(const Plan& p, std::int64_t layers) {
  const int pp = p[Dim::pp];
  if (pp <= 1) return "";
  if (!p.stage_layers.empty()) {
    std::string out;
    for (std::int64_t n : p.stage_layers) out += fmt::format("{}{}", out.empty() ? "" : " / ", n);
    return out;
  }
  const StageLayers s = split_of(p, layers);
  if (s.even() && !sets_first_last_split(p)) return "";
  if (pp == 2) return fmt::format("{} / {}", s.first, s.last);
  return fmt::format("{} / {} x {} / {}", s.first, s.middle, pp - 2, s.last);
}

std::string split_clause(const Plan& p, std::int64_t layers) {
  const std::string s = split_string(p, layers);
  return s.empty() ? s : fmt::format(", layers per stage {}", s);
}

bool sets_first_last_split(const Plan& p) {
  return p.first_stage_layers > 0 || p.last_stage_layers > 0;
}

std::string split_cell(const Plan& p, std::int64_t layers) {
  if (!sets_first_last_split(p)) return "-";
  const StageLayers s = split_of(p, layers);
  return fmt::format("{}/{}", s.first, s.last);
}

unsigned own_recompute_modules(const Plan& p) {
  return p.recompute == Recompute::full ? 0u : p.recompute_modules;
}

std::string recompute_string(const Plan& p, unsigned job_modules) {
  if (p.recompute == Recompute::full && p.recompute_layers > 0)
    return fmt::format("block {}", p.recompute_layers);
  const unsigned modules =
      p.recompute == Recompute::full ? 0u : own_recompute_modules(p) | job_modules;
  // Formatted, not concatenated: GCC 12's -Wrestrict misfires on a concatenated temporary.
  const std::string more =
      modules != 0 ? fmt::format("+{}", recompute_modules_string(modules)) : "";
  if (p.offload_layers > 0) return fmt::format("offload {}{}", p.offload_layers, more);
  return fmt::format("{}{}", to_string(p.recompute), more);
}

std::string degrees_string(const Plan& p, bool with_dp) {
  std::string out = fmt::format("tp {}", p[Dim::tp]);
  for (Dim d : {Dim::cp, Dim::ep})
    if (p[d] > 1) out += fmt::format(" {} {}", to_string(d), p[d]);
  if (folds_experts(p)) out += fmt::format(" (expert tp {})", expert_tp_of(p));
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

int expert_tp_of(const Plan& p) { return p.expert_tp > 0 ? p.expert_tp : p[Dim::tp]; }

bool folds_experts(const Plan& p) { return p[Dim::ep] > 1 && expert_tp_of(p) != p[Dim::tp]; }

std::int64_t expert_ranks(const Plan& p) {
  return static_cast<std::int64_t>(p[Dim::tp]) * p[Dim::cp] * p[Dim::dp];
}

double expert_replicas(const Plan& p) {
  return static_cast<double>(expert_ranks(p)) / (static_cast<double>(p[Dim::ep]) * expert_tp_of(p));
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
