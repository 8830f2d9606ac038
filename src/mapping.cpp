#include "topoplan/mapping.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>

namespace topoplan {

namespace {

Layout make_layout(const Order& order, const DimArray<int>& degree) {
  Layout l;
  l.degree = degree;
  std::int64_t stride = 1;
  for (Dim d : order) {
    l.stride[d] = stride;
    stride *= degree[d];
  }
  return l;
}

std::vector<std::vector<int>> layout_groups(const Layout& l, std::int64_t world, Dim d) {
  std::vector<std::vector<int>> out;
  const int n = l.degree[d];
  const std::int64_t s = l.stride[d];
  out.reserve(static_cast<std::size_t>(world / n));
  for (std::int64_t r = 0; r < world; ++r) {
    if ((r / s) % n != 0) continue;
    std::vector<int> g(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) g[k] = static_cast<int>(r + k * s);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

Mapping Mapping::from_order(const Plan& plan) {
  Mapping m;
  DimArray<int> dense = plan.degree;
  dense[Dim::ep] = 1;
  m.dense_ = make_layout(plan.order, dense);
  m.world_ = plan.world();
  // Megatron's expert generator: expert TP (tp unless folded lower), CP folded into expert DP;
  // with expert TP below tp the EP groups take the rest of the TP ranks (MoE parallel folding).
  const int ep = std::max(1, plan[Dim::ep]);
  const int etp = expert_tp_of(plan);
  DimArray<int> expert{};
  expert[Dim::tp] = etp;
  expert[Dim::cp] = 1;
  expert[Dim::ep] = ep;
  expert[Dim::pp] = plan[Dim::pp];
  const std::int64_t rest = m.world_ / (static_cast<std::int64_t>(etp) * ep * plan[Dim::pp]);
  expert[Dim::dp] = static_cast<int>(std::max<std::int64_t>(1, rest));
  m.expert_ = make_layout(plan.order, expert);
  return m;
}

Mapping Mapping::with_devices(const Plan& plan, std::vector<int> device_of_rank) {
  Mapping m = from_order(plan);
  bool identity = true;
  for (std::size_t r = 0; r < device_of_rank.size(); ++r)
    identity = identity && device_of_rank[r] == static_cast<int>(r);
  if (!identity) m.device_ = std::move(device_of_rank);
  return m;
}

bool expert_pp_mismatch(const Plan& plan) {
  if (plan[Dim::pp] == 1) return false;
  Mapping m = Mapping::from_order(plan);
  return m.dense().stride[Dim::pp] != m.expert().stride[Dim::pp];
}

std::vector<std::vector<int>> Mapping::groups(Dim d) const {
  return layout_groups(layout_of(d), world_, d);
}

std::vector<std::vector<int>> Mapping::expert_dp_groups() const {
  return layout_groups(expert_, world_, Dim::dp);
}

namespace {

/// True when every server the (sorted) devices touch holds the same GPU indices: NCCL can then
/// keep each channel on one rail.
bool same_rails(const Cluster& c, const std::vector<int>& sorted) {
  const int per = c.gpus_per_server();
  std::vector<int> first, cur;
  int server = -1;
  bool have_first = false;
  for (std::size_t i = 0; i <= sorted.size(); ++i) {
    if (i == sorted.size() || sorted[i] / per != server) {
      if (server >= 0) {
        if (!have_first) {
          first = cur;
          have_first = true;
        } else if (cur != first) {
          return false;
        }
      }
      if (i == sorted.size()) break;
      server = sorted[i] / per;
      cur.clear();
    }
    cur.push_back(sorted[i] % per);
  }
  return true;
}

}  // namespace

GroupShape shape_of_devices(const Cluster& c, std::span<const int> devices) {
  GroupShape g;
  g.size = static_cast<int>(devices.size());
  if (g.size <= 1) return g;
  std::vector<int> sorted(devices.begin(), devices.end());
  std::sort(sorted.begin(), sorted.end());
  g.span_tier = c.tier_count() - 1;
  for (int k = 0; k < c.tier_count(); ++k) {
    const std::int64_t D = c.domain_size(k);
    int fewest = g.size, run = 0;
    std::int64_t cur = sorted.front() / D;
    bool one_domain = true;
    for (int dev : sorted) {
      if (dev / D != cur) {
        fewest = std::min(fewest, run);
        run = 0;
        cur = dev / D;
        one_domain = false;
      }
      ++run;
    }
    fewest = std::min(fewest, run);
    if (one_domain) {
      g.span_tier = k;
      break;
    }
    g.per_domain[k] = fewest;
  }
  if (g.span_tier == c.rail_tier() && !same_rails(c, sorted)) {
    // Servers hold different GPU indices: some hop changes rails, through the spine. Each rail
    // (leaf block, index) is then the domain whose uplinks the group's members share.
    const int per = c.gpus_per_server();
    const std::int64_t block = c.domain_size(g.span_tier);
    std::vector<std::int64_t> rails(sorted.size());
    for (std::size_t i = 0; i < sorted.size(); ++i)
      rails[i] = sorted[i] / block * per + sorted[i] % per;
    std::sort(rails.begin(), rails.end());
    int fewest = g.size, run = 0;
    for (std::size_t i = 0; i < rails.size(); ++i) {
      run = i > 0 && rails[i] == rails[i - 1] ? run + 1 : 1;
      if (i + 1 == rails.size() || rails[i + 1] != rails[i]) fewest = std::min(fewest, run);
    }
    g.per_domain[g.span_tier] = fewest;
    ++g.span_tier;
  }
  return g;
}

namespace {

/// Folds one group's shape into the worst-so-far.
void fold_worst(GroupShape& acc, const GroupShape& g, bool first) {
  if (first) {
    acc = g;
    return;
  }
  const int span = std::max(acc.span_tier, g.span_tier);
  for (int k = 0; k < span; ++k) {
    int a = acc.crosses(k) ? acc.per_domain[k] : acc.size;
    int b = g.crosses(k) ? g.per_domain[k] : g.size;
    acc.per_domain[k] = std::min(a, b);
  }
  acc.span_tier = span;
}

}  // namespace

namespace {

GroupShape layout_shape_by_groups(const Cluster& c, const Mapping& m, const Layout& l, Dim d) {
  GroupShape worst;
  if (l.degree[d] <= 1) return worst;
  bool first = true;
  std::vector<int> devs(static_cast<std::size_t>(l.degree[d]));
  for (const auto& g : layout_groups(l, m.world(), d)) {
    for (std::size_t i = 0; i < g.size(); ++i) devs[i] = m.device(g[i]);
    fold_worst(worst, shape_of_devices(c, devs), first);
    first = false;
  }
  return worst;
}

}  // namespace

/// Worst shapes of identity-mapping layouts, by (world, stride, members).
struct ShapeMemo {
  std::mutex mutex;
  std::map<std::array<std::int64_t, 3>, GroupShape> shapes;
};

std::shared_ptr<ShapeMemo> make_shape_memo() { return std::make_shared<ShapeMemo>(); }

namespace {

/// An identity mapping whose groups (base + i*s) are not aligned with the domains: the domains
/// nest, so every one below the world divides the largest such, D, and shifting a group by
/// lcm(s * n, D) devices gives a group with the same shape. Walking the groups of one period
/// finds the same worst shape as walking them all (thousands of times fewer on a large cluster).
GroupShape walk_periodic_shape(const Cluster& c, std::int64_t world, std::int64_t s, int n) {
  const std::int64_t span = s * n;
  std::int64_t largest = 1;
  for (int k = 0; k < c.tier_count(); ++k)
    if (c.domain_size(k) < world) largest = c.domain_size(k);
  const std::int64_t period = std::min(world, std::lcm(span, largest));
  GroupShape worst;
  bool first = true;
  std::vector<int> devs(static_cast<std::size_t>(n));
  for (std::int64_t block = 0; block < period; block += span)
    for (std::int64_t t = 0; t < s; ++t) {
      for (int i = 0; i < n; ++i)
        devs[static_cast<std::size_t>(i)] = static_cast<int>(block + t + i * s);
      fold_worst(worst, shape_of_devices(c, devs), first);
      first = false;
    }
  return worst;
}

/// walk_periodic_shape, remembered per cluster: a search asks for the same layouts again and
/// again under other degrees and orders.
GroupShape periodic_layout_shape(const Cluster& c, std::int64_t world, std::int64_t s, int n) {
  ShapeMemo& memo = c.shape_memo();
  const std::array<std::int64_t, 3> key{world, s, n};
  {
    const std::lock_guard<std::mutex> lock(memo.mutex);
    if (auto it = memo.shapes.find(key); it != memo.shapes.end()) return it->second;
  }
  const GroupShape g = walk_periodic_shape(c, world, s, n);
  const std::lock_guard<std::mutex> lock(memo.mutex);
  memo.shapes.emplace(key, g);
  return g;
}

GroupShape layout_shape(const Cluster& c, const Mapping& m, const Layout& l, Dim d) {
  GroupShape g;
  const int n = l.degree[d];
  g.size = n;
  if (n <= 1) return g;
  if (!m.identity()) return layout_shape_by_groups(c, m, l, d);
  // Members are base + i*s. Decide per tier from divisibility alone; fall back when the groups
  // are not aligned with the domains (then groups differ and each must be walked).
  const std::int64_t s = l.stride[d];
  const std::int64_t span = s * n;
  for (int k = 0; k < c.tier_count(); ++k) {
    const std::int64_t D = c.domain_size(k);
    // Across rails the servers' GPU indices decide: walk the groups.
    if (k == c.rail_tier() && s % c.gpus_per_server() != 0)
      return periodic_layout_shape(c, m.world(), s, n);
    if (D >= m.world() || (span <= D && D % span == 0)) {
      g.span_tier = k;
      return g;
    }
    if (s >= D && s % D == 0) {
      g.per_domain[k] = 1;
    } else if (s < D && D % s == 0 && span % D == 0) {
      g.per_domain[k] = static_cast<int>(D / s);
    } else {
      return periodic_layout_shape(c, m.world(), s, n);
    }
  }
  g.span_tier = c.tier_count() - 1;
  return g;
}

}  // namespace

GroupShape dimension_shape_by_groups(const Cluster& c, const Mapping& m, Dim d) {
  return layout_shape_by_groups(c, m, m.layout_of(d), d);
}

GroupShape dimension_shape(const Cluster& c, const Mapping& m, Dim d) {
  return layout_shape(c, m, m.layout_of(d), d);
}

GroupShape expert_dp_shape(const Cluster& c, const Mapping& m) {
  return layout_shape(c, m, m.expert(), Dim::dp);
}

GroupShape combine_shapes(const GroupShape& a, const GroupShape& b) {
  if (a.size <= 1) return b;
  if (b.size <= 1) return a;
  GroupShape g;
  g.size = a.size * b.size;
  g.span_tier = std::max(a.span_tier, b.span_tier);
  for (int k = 0; k < g.span_tier; ++k)
    g.per_domain[k] =
        (a.crosses(k) ? a.per_domain[k] : a.size) * (b.crosses(k) ? b.per_domain[k] : b.size);
  return g;
}

}  // namespace topoplan
