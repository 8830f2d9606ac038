#include "topoplan/collectives.hpp"

#include <algorithm>
#include <limits>

namespace topoplan {

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::none: return "none";
    case Algorithm::ring: return "ring";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::direct: return "direct";
  }
  return "?";
}

double achieved_bandwidth(const Cluster& c, const Calibration& cal, int tier) {
  double frac = tier == 0 ? cal.intra_server_bw_fraction : cal.inter_server_bw_fraction;
  return c.bandwidth(tier) * frac;
}

double ring_bandwidth(const Cluster& c, const Calibration& cal, const GroupShape& g) {
  double bw = std::numeric_limits<double>::infinity();
  // NVLink hops exist when some server holds two or more of the group's members.
  if (g.span_tier == 0 || (g.span_tier > 0 && g.per_domain[0] >= 2))
    bw = achieved_bandwidth(c, cal, 0);
  for (int k = 1; k <= g.span_tier; ++k)
    bw = std::min(bw, g.per_domain[k - 1] * achieved_bandwidth(c, cal, k));
  return bw;
}

namespace {

CollectiveCost ring(const Cluster& c, const Calibration& cal, const GroupShape& g, double bytes,
                    int steps_per_member) {
  if (g.size <= 1 || bytes <= 0) return {};
  const double n = g.size;
  const double steps = steps_per_member * (n - 1);
  const double t = steps * c.latency(g.span_tier) + steps / n * bytes / ring_bandwidth(c, cal, g);
  return {t, Algorithm::ring};
}

}  // namespace

CollectiveCost ring_all_reduce(const Cluster& c, const Calibration& cal, const GroupShape& g,
                               double bytes) {
  return ring(c, cal, g, bytes, 2);
}

CollectiveCost ring_all_gather(const Cluster& c, const Calibration& cal, const GroupShape& g,
                               double bytes) {
  return ring(c, cal, g, bytes, 1);
}

CollectiveCost ring_reduce_scatter(const Cluster& c, const Calibration& cal, const GroupShape& g,
                                   double bytes) {
  return ring(c, cal, g, bytes, 1);
}

CollectiveCost hierarchical_all_reduce(const Cluster& c, const Calibration& cal,
                                       const GroupShape& g, double bytes) {
  const int r = g.span_tier >= 1 ? g.per_domain[0] : 0;
  if (g.size <= 1 || r < 2 || g.size % r != 0)
    return {std::numeric_limits<double>::infinity(), Algorithm::none};
  GroupShape inner;
  inner.size = r;
  inner.span_tier = 0;
  GroupShape outer;
  outer.size = g.size / r;
  outer.span_tier = g.span_tier;
  outer.per_domain[0] = 1;
  for (int k = 1; k < g.span_tier; ++k) outer.per_domain[k] = std::max(1, g.per_domain[k] / r);
  const double t = ring_reduce_scatter(c, cal, inner, bytes).time +
                   ring_all_reduce(c, cal, outer, bytes / r).time +
                   ring_all_gather(c, cal, inner, bytes).time;
  return {t, Algorithm::hierarchical};
}

CollectiveCost all_reduce(const Cluster& c, const Calibration& cal, const GroupShape& g,
                          double bytes) {
  CollectiveCost best = ring_all_reduce(c, cal, g, bytes);
  if (g.span_tier >= 1) {
    CollectiveCost h = hierarchical_all_reduce(c, cal, g, bytes);
    if (h.time < best.time) best = h;
  }
  return best;
}

CollectiveCost send_recv(const Cluster& c, const Calibration& cal, int tier, double bytes) {
  if (tier < 0 || bytes <= 0) return {};
  return {c.latency(tier) + bytes / achieved_bandwidth(c, cal, tier), Algorithm::direct};
}

}  // namespace topoplan
