#include "topoplan/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace topoplan {

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::none: return "none";
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::nvls: return "nvls";
    case Algorithm::one_shot: return "one-shot";
    case Algorithm::direct: return "direct";
    case Algorithm::sharp: return "sharp";
  }
  return "?";
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
    case Protocol::none: return "none";
  }
  return "?";
}

std::string collective_name(Algorithm a, Protocol p) {
  std::string out = to_string(a);
  if (p != Protocol::none) out += std::string(" ") + to_string(p);
  return out;
}

double exposed_with_sm_share(const Fabric& f, double total, double exposed) {
  return exposed + f.sm_share * std::max(0.0, total - exposed);
}

Fabric make_fabric(const Cluster& c, const Calibration& cal) {
  Fabric f;
  f.tiers = c.tier_count();
  f.base_latency = cal.collective_base_latency;
  f.network_base_latency = cal.network_base_latency;
  f.net_overhead = {cal.net_overhead, cal.net_overhead, 3.0 * cal.net_overhead};
  f.nvls_latency = cal.nvls_latency;
  f.hierarchical = cal.use_hierarchical_all_reduce > 0;
  f.sm_share = cal.comm_sm_fraction;
  f.protocol_base = {cal.collective_base_latency, cal.ll128_base_latency, cal.simple_base_latency};
  f.ring_fraction = {cal.ll_bandwidth_fraction, cal.ll128_bandwidth_fraction, 1.0};
  const double tree = cal.tree_bandwidth_fraction;
  f.tree_fraction = {tree * cal.tree_ll_bandwidth_fraction,
                     tree * cal.tree_ll128_bandwidth_fraction, tree};
  f.ll_ceiling = {cal.ll_max_busbw[static_cast<int>(c.gpu().arch)], cal.ll_max_busbw_two_servers,
                  cal.ll_max_busbw_more_servers};
  // NCCL turns LL128 on only where the GPUs inside a server talk over NVLink.
  if (c.link(0) == Link::pcie) f.ring_fraction[1] = f.tree_fraction[1] = 0.0;
  for (int k = 0; k < f.tiers; ++k) {
    const LinkCalibration& l = cal.links[static_cast<int>(c.link(k))];
    const double hops = k >= 2 ? (k - 1) * cal.switch_hop_latency : 0.0;
    f.bandwidth[k] = c.bandwidth(k) * l.bw_fraction;
    f.latency[k] = c.latency_override(k) > 0 ? c.latency_override(k) : l.step_latency + hops;
    // A protocol's step is never faster than LL's (a cluster's own latency_us included).
    f.step_latency[0][k] = f.latency[k];
    f.step_latency[1][k] = std::max(f.latency[k], l.ll128_step_latency + hops);
    f.step_latency[2][k] = std::max(f.latency[k], l.simple_step_latency + hops);
    f.nvls[k] = c.bandwidth(k) * l.nvls_bw_fraction;
    f.sharp[k] = k >= 1 && c.in_network_reduction(k) && (k == 1 || f.sharp[k - 1]);
  }
  return f;
}

double ring_bandwidth(const Fabric& f, const GroupShape& g) {
  double bw = std::numeric_limits<double>::infinity();
  // NVLink hops exist when some server holds two or more of the group's members.
  if (g.span_tier == 0 || (g.span_tier > 0 && g.per_domain[0] >= 2)) bw = f.bandwidth[0];
  for (int k = 1; k <= g.span_tier; ++k) bw = std::min(bw, g.per_domain[k - 1] * f.bandwidth[k]);
  return bw;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Once-per-collective latency: the launch, plus the network set-up if it leaves the server.
double base(const Fabric& f, int span) {
  return f.base_latency + (span >= 1 ? f.network_base_latency : 0.0);
}

/// The group's members inside one server.
int members_per_server(const GroupShape& g) { return g.span_tier >= 1 ? g.per_domain[0] : g.size; }

/// LL's bus-bandwidth ceiling for the group: one server, two, or more.
double ll_ceiling_for(const Fabric& f, const GroupShape& g) {
  if (g.span_tier < 1) return f.ll_ceiling[0];
  const int servers = g.size / members_per_server(g);
  return f.ll_ceiling[servers <= 2 ? 1 : 2];
}

/// The fastest protocol for a collective that moves `volume` bytes per GPU through `bw` (the
/// ring's bus bandwidth) and whose latency `latency(step, p)` is from protocol p's per-tier step
/// latencies. Ties go to the first of LL, LL128, Simple.
template <class Latency>
CollectiveCost fastest_protocol(const Fabric& f, const GroupShape& g, Algorithm a,
                                const std::array<double, kProtocols>& fraction, double volume,
                                double bw, Latency latency) {
  CollectiveCost best{kInf, a, Protocol::none};
  const double network = g.span_tier >= 1 ? f.network_base_latency : 0.0;
  for (int p = 0; p < kProtocols; ++p) {
    double b = bw * fraction[p];
    if (p == static_cast<int>(Protocol::ll)) b = std::min(b, ll_ceiling_for(f, g));
    if (!(b > 0)) continue;
    const double t = f.protocol_base[p] + network + latency(f.step_latency[p], p) + volume / b;
    if (t < best.time) best = {t, a, static_cast<Protocol>(p)};
  }
  return best;
}

/// A ring's steps, each passing one member's share on: as NCCL's tuning model counts them
/// (src/graph/tuning.cc), a ring that leaves the server crosses the network once per server it
/// visits (per pass) and takes NVLink between server-mates, at no less than the network proxy's
/// overhead per step.
CollectiveCost ring(const Fabric& f, const GroupShape& g, double bytes, int steps_per_member) {
  if (g.size <= 1 || bytes <= 0) return {};
  const double n = g.size;
  const double steps = steps_per_member * (n - 1);
  const double across = steps_per_member * (servers_spanned(g) - 1), inside = steps - across;
  return fastest_protocol(f, g, Algorithm::ring, f.ring_fraction, steps / n * bytes,
                          ring_bandwidth(f, g), [&](const auto& lat, int p) {
                            if (across <= 0) return steps * lat[g.span_tier];
                            return inside * std::max(lat[0], f.net_overhead[p]) +
                                   across * lat[g.span_tier];
                          });
}

}  // namespace

CollectiveCost ring_all_reduce(const Fabric& f, const GroupShape& g, double bytes) {
  return ring(f, g, bytes, 2);
}

CollectiveCost ring_all_gather(const Fabric& f, const GroupShape& g, double bytes) {
  return ring(f, g, bytes, 1);
}

CollectiveCost ring_reduce_scatter(const Fabric& f, const GroupShape& g, double bytes) {
  return ring(f, g, bytes, 1);
}

CollectiveCost tree_all_reduce(const Fabric& f, const GroupShape& g, double bytes) {
  if (g.size <= 1 || bytes <= 0) return {};
  if (g.span_tier < 1) return {kInf, Algorithm::none};
  const int r = members_per_server(g);
  const double depth = std::ceil(std::log2(servers_spanned(g)));
  return fastest_protocol(
      f, g, Algorithm::tree, f.tree_fraction, 2.0 * bytes, ring_bandwidth(f, g),
      [&](const auto& lat, int) { return 2.0 * ((r - 1) * lat[0] + depth * lat[g.span_tier]); });
}

CollectiveCost hierarchical_all_reduce(const Fabric& f, const GroupShape& g, double bytes) {
  const int r = g.span_tier >= 1 ? g.per_domain[0] : 0;
  if (g.size <= 1 || r < 2 || g.size % r != 0) return {kInf, Algorithm::none};
  GroupShape inner;
  inner.size = r;
  inner.span_tier = 0;
  GroupShape outer;
  outer.size = g.size / r;
  outer.span_tier = g.span_tier;
  outer.per_domain[0] = 1;
  for (int k = 1; k < g.span_tier; ++k) outer.per_domain[k] = std::max(1, g.per_domain[k] / r);
  const double across = std::min(ring_all_reduce(f, outer, bytes / r).time,
                                 tree_all_reduce(f, outer, bytes / r).time);
  const double t =
      ring_reduce_scatter(f, inner, bytes).time + across + ring_all_gather(f, inner, bytes).time;
  return {t, Algorithm::hierarchical};
}

CollectiveCost nvls_all_reduce(const Fabric& f, const GroupShape& g, double bytes) {
  if (g.size <= 1 || bytes <= 0) return {};
  if (g.span_tier != 0 || f.nvls[0] <= 0) return {kInf, Algorithm::none};
  const double n = g.size;
  return {f.nvls_latency + 2.0 * (n - 1) / n * bytes / f.nvls[0], Algorithm::nvls};
}

CollectiveCost sharp_all_reduce(const Fabric& f, const GroupShape& g, double bytes) {
  if (g.size <= 1 || bytes <= 0) return {};
  if (g.span_tier < 1 || !f.sharp[g.span_tier]) return {kInf, Algorithm::none};
  const int r = members_per_server(g);
  const double network = f.bandwidth[g.span_tier];  // per GPU, the least of the tiers up to it
  const double inside = r > 1 ? 2.0 * (r - 1) / r * bytes / f.bandwidth[0] : 0.0;
  const double lat = base(f, g.span_tier) + 2.0 * g.span_tier * f.latency[g.span_tier] +
                     (r > 1 ? 2.0 * (r - 1) * f.latency[0] : 0.0);
  return {lat + std::max(inside, bytes / r / network), Algorithm::sharp};
}

CollectiveCost one_shot_all_reduce(const Fabric& f, const GroupShape& g, double bytes) {
  if (g.size <= 1 || bytes <= 0) return {};
  if (g.span_tier != 0) return {kInf, Algorithm::none};
  return {f.base_latency + f.latency[0] + (g.size - 1) * bytes / f.bandwidth[0],
          Algorithm::one_shot};
}

CollectiveCost all_reduce(const Fabric& f, const GroupShape& g, double bytes) {
  CollectiveCost best = ring_all_reduce(f, g, bytes);
  if (g.size <= 1 || bytes <= 0) return best;
  for (const CollectiveCost& c :
       {tree_all_reduce(f, g, bytes), nvls_all_reduce(f, g, bytes), sharp_all_reduce(f, g, bytes)})
    if (c.time < best.time) best = c;
  if (f.hierarchical) {
    CollectiveCost h = hierarchical_all_reduce(f, g, bytes);
    if (h.time < best.time) best = h;
  }
  return best;
}

double servers_spanned(const GroupShape& g) {
  return static_cast<double>(g.size) / members_per_server(g);
}

std::array<double, Cluster::kMaxTiers> all_to_all_per_tier(const Fabric& f, const GroupShape& g,
                                                           double bytes, double server_share) {
  std::array<double, Cluster::kMaxTiers> t{};
  if (g.size <= 1 || bytes <= 0) return t;
  const double n = g.size;
  double inside = 1;  // members in the same tier-(k-1) domain, this GPU included
  for (int k = 0; k <= g.span_tier; ++k) {
    const double members = k < g.span_tier ? g.per_domain[k] : n;
    t[k] = (members - inside) / n * bytes / f.bandwidth[k] * (k >= 1 ? server_share : 1.0);
    inside = members;
  }
  return t;
}

CollectiveCost all_to_all(const Fabric& f, const GroupShape& g, double bytes, double server_share) {
  if (g.size <= 1 || bytes <= 0) return {};
  double slowest = 0;
  for (double t : all_to_all_per_tier(f, g, bytes, server_share)) slowest = std::max(slowest, t);
  return {base(f, g.span_tier) + f.latency[g.span_tier] + slowest, Algorithm::direct};
}

CollectiveCost broadcast(const Fabric& f, const GroupShape& g, double bytes) {
  if (g.size <= 1 || bytes <= 0) return {};
  return fastest_protocol(f, g, Algorithm::ring, f.ring_fraction, bytes, ring_bandwidth(f, g),
                          [&](const auto& lat, int) { return (g.size - 1) * lat[g.span_tier]; });
}

CollectiveCost send_recv(const Fabric& f, int tier, double bytes) {
  if (tier < 0 || bytes <= 0) return {};
  return {base(f, tier) + f.latency[tier] + bytes / f.bandwidth[tier], Algorithm::direct};
}

}  // namespace topoplan
