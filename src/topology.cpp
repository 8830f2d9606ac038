#include "topoplan/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "detail/gpu_names.hpp"
#include "detail/json_input.hpp"
#include "detail/names.hpp"
#include "topoplan/error.hpp"
#include "topoplan/units.hpp"

namespace topoplan {
namespace {

constexpr std::array<const char*, kArchs> kArchNames{"ampere", "hopper", "blackwell",
                                                     "blackwell-ultra"};
constexpr std::array<const char*, kLinks> kLinkNames{"nvlink3", "nvlink4",    "nvlink5",
                                                     "pcie",    "infiniband", "roce"};

/// An enum field read through its name table.
template <class E, std::size_t N>
E parse_named(const detail::JsonCursor& c, std::string_view key,
              const std::array<const char*, N>& names) {
  if (auto e = detail::from_name<E>(names, c.string(key))) return *e;
  c.fail(key, detail::names_list(names));
}

GpuSpec gpu_from(const detail::JsonCursor& c) {
  c.warn_unknown_keys({"name", "arch", "bf16_TFLOPs", "fp8_TFLOPs", "fp4_TFLOPs", "memory_GiB",
                       "hbm_TBps", "host_link_GBps"});
  GpuSpec g;
  g.name = c.string("name");
  g.arch = parse_named<Arch>(c, "arch", kArchNames);
  // Physical ranges, a million times past today's parts either way.
  g.peak_flops = units::from_TFLOPs(c.number_in("bf16_TFLOPs", 1e-3, 1e6));
  g.peak_flops_fp8 = units::from_TFLOPs(c.number_in_or("fp8_TFLOPs", 0, 1e6, 0));
  g.peak_flops_fp4 = units::from_TFLOPs(c.number_in_or("fp4_TFLOPs", 0, 1e6, 0));
  g.memory_bytes = units::from_GiB(c.number_in("memory_GiB", 1e-3, 1e6));
  g.hbm_bandwidth = units::from_TBps(c.number_in("hbm_TBps", 1e-6, 1e4));
  g.host_link_bandwidth = units::from_GBps(c.number_in_or("host_link_GBps", 0, 1e6, 0));
  g.source = c.opt_string("source").value_or("");
  return g;
}

/// The most GPUs one server holds (an NVL576-class domain fits).
constexpr std::int64_t kMaxGpusPerServer = 1024;

/// `v` if at most `max`, else an InputError naming the field: bounds keep every product of counts
/// far from overflow.
std::int64_t bounded(const detail::JsonCursor& c, std::string_view key, std::int64_t v,
                     std::int64_t max) {
  if (v > max) c.fail(key, fmt::format("an integer up to {}", max));
  return v;
}

/// A list of host names: non-empty, each once across every list read into `seen`.
std::vector<std::string> read_names(const detail::JsonCursor& list, std::set<std::string>& seen) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < list.array_size(); ++i) {
    const auto& v = list.node()[i];
    if (!v.is_string() || v.get<std::string>().empty())
      list.at(i).fail_here(fmt::format("expected a host name, got {}", v.dump()));
    const std::string h = v.get<std::string>();
    if (!seen.insert(h).second)
      list.at(i).fail_here(fmt::format("expected each host once, got '{}' again", h));
    out.push_back(h);
  }
  return out;
}

/// "hosts": distinct non-empty names, at least one per server; then "compute_hosts", where
/// server.gpus_per_host splits servers: at least one per host, none of them a server's name.
void read_hosts(const detail::JsonCursor& c, ClusterSpec& s) {
  std::set<std::string> seen;
  if (c.has("hosts")) {
    const auto hosts = c.at("hosts");
    s.hosts = read_names(hosts, seen);
    if (static_cast<int>(s.hosts.size()) < s.nodes)
      hosts.fail_here(
          fmt::format("expected a host per server ({}), got {}", s.nodes, s.hosts.size()));
  }
  if (!c.has("compute_hosts")) return;
  const auto list = c.at("compute_hosts");
  if (hosts_per_server(s) == 1)
    list.fail_here(
        fmt::format("expected only where server.gpus_per_host divides a server's {} "
                    "GPUs into several hosts",
                    s.tiers[0].fanout));
  s.compute_hosts = read_names(list, seen);
  const std::int64_t want = std::int64_t{s.nodes} * hosts_per_server(s);
  if (static_cast<std::int64_t>(s.compute_hosts.size()) < want)
    list.fail_here(fmt::format("expected a host per {} GPUs ({}), got {}", s.gpus_per_host, want,
                               s.compute_hosts.size()));
}

/// The slowest GPU (dense FLOP/s) of the groups, with the least memory of any: the one type
/// the parts of the model that assume one take.
GpuSpec slowest_gpu(const std::vector<ServerGroup>& groups) {
  GpuSpec g;
  bool first = true;
  for (const auto& sg : groups)
    if (!sg.absent && (first || sg.gpu.peak_flops < g.peak_flops)) {
      g = sg.gpu;
      first = false;
    }
  for (const auto& sg : groups)
    if (!sg.absent) g.memory_bytes = std::min(g.memory_bytes, sg.gpu.memory_bytes);
  return g;
}

/// "servers": [{"count": 16, "gpu": "a100-80gb"}, {"count": 16, "gpu": "h100-sxm"}], in server
/// order; "nodes", if given, must be their sum.
template <class GpuAt>
void read_server_groups(const detail::JsonCursor& c, ClusterSpec& s, const GpuAt& gpu_at) {
  const auto groups = c.at("servers");
  if (groups.array_size() == 0) groups.fail_here("expected at least one server group");
  std::int64_t total = 0;
  for (std::size_t i = 0; i < groups.array_size(); ++i) {
    const auto g = groups.at(i);
    g.warn_unknown_keys({"count", "gpu", "gpus", "absent"});
    ServerGroup sg;
    sg.count = static_cast<int>(bounded(g, "count", g.positive_int("count"), Cluster::kMaxGpus));
    sg.absent = g.boolean_or("absent", false);
    // Placeholders need no GPU: they take the previous group's (or the next one's, filled below).
    if (!sg.absent || g.has("gpu")) sg.gpu = gpu_at(g, g.path_of("gpu"));
    sg.gpus =
        static_cast<int>(bounded(g, "gpus", g.int_at_least_or("gpus", 1, 0), kMaxGpusPerServer));
    total += sg.count;
    s.server_groups.push_back(sg);
  }
  // Placeholders without a GPU borrow a neighbour's (it is never used).
  const auto real = std::find_if(s.server_groups.begin(), s.server_groups.end(),
                                 [](const ServerGroup& sg) { return !sg.absent; });
  if (real == s.server_groups.end()) groups.fail_here("expected a server group that is not absent");
  for (auto& sg : s.server_groups)
    if (sg.gpu.name.empty()) sg.gpu = real->gpu;
  if (total > Cluster::kMaxGpus)
    groups.fail_here(fmt::format("expected at most {} servers in all", Cluster::kMaxGpus));
  s.nodes = static_cast<int>(total);
  if (c.has("nodes") && c.positive_int("nodes") != total)
    c.fail("nodes", fmt::format("the servers' count summed ({})", total));
  if (c.has("gpu")) c.fail("gpu", "no \"gpu\" next to \"servers\" (each group names its own)");
  s.gpu = slowest_gpu(s.server_groups);
}

void check_schema(const detail::JsonCursor& c, const char* expected) {
  if (!c.has("schema")) return;
  if (c.string("schema") != expected) c.fail("schema", fmt::format("\"{}\"", expected));
}

}  // namespace

const char* to_string(Arch a) { return detail::name_of(kArchNames, a); }

const char* to_string(Link l) { return detail::name_of(kLinkNames, l); }

GpuSpec parse_gpu_json(const std::string& text, const std::string& source) {
  auto doc = detail::parse_json(text, source);
  detail::JsonCursor c(doc, source);
  check_schema(c, "topoplan.gpu/v1");
  return gpu_from(c);
}

namespace {

nlohmann::ordered_json gpu_json(const GpuSpec& g) {
  nlohmann::ordered_json out{{"name", g.name},
                             {"arch", to_string(g.arch)},
                             {"bf16_TFLOPs", units::to_TFLOPs(g.peak_flops)},
                             {"fp8_TFLOPs", units::to_TFLOPs(g.peak_flops_fp8)}};
  if (g.peak_flops_fp4 > 0) out["fp4_TFLOPs"] = units::to_TFLOPs(g.peak_flops_fp4);
  out["memory_GiB"] = units::to_GiB(g.memory_bytes);
  out["hbm_TBps"] = units::to_TBps(g.hbm_bandwidth);
  if (g.host_link_bandwidth > 0) out["host_link_GBps"] = units::to_GBps(g.host_link_bandwidth);
  return out;
}

}  // namespace

std::string cluster_json(const ClusterSpec& s) {
  nlohmann::ordered_json j;
  j["schema"] = "topoplan.cluster/v1";
  j["name"] = s.name;
  j["gpu"] = gpu_json(s.gpu);
  j["nodes"] = s.nodes;
  if (!s.server_groups.empty()) {
    j.erase("gpu");
    nlohmann::ordered_json groups = nlohmann::ordered_json::array();
    for (const auto& g : s.server_groups) {
      nlohmann::ordered_json o = {{"count", g.count}, {"gpu", gpu_json(g.gpu)}};
      if (g.gpus > 0) o["gpus"] = g.gpus;
      if (g.absent) o["absent"] = true;
      groups.push_back(o);
    }
    j["servers"] = groups;
  }
  j["server"] = {{"nics", s.nics_per_server}, {"nic_Gbps", units::to_Gbps(s.nic_bandwidth)}};
  if (s.gpus_per_host > 0) j["server"]["gpus_per_host"] = s.gpus_per_host;
  nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
  for (const auto& t : s.tiers) {
    nlohmann::ordered_json o = {{"name", t.name},
                                {"fanout", t.fanout},
                                {"link", to_string(t.link)},
                                {"bandwidth_GBps", units::to_GBps(t.bandwidth)}};
    if (t.latency > 0) o["latency_us"] = units::to_us(t.latency);
    if (t.oversubscription != 1.0) o["oversubscription"] = t.oversubscription;
    if (t.rails) o["rail_optimized"] = true;
    if (t.in_network_reduction) o["in_network_reduction"] = true;
    tiers.push_back(o);
  }
  j["tiers"] = tiers;
  if (!s.hosts.empty()) j["hosts"] = s.hosts;
  if (!s.compute_hosts.empty()) j["compute_hosts"] = s.compute_hosts;
  if (!s.down.empty()) {
    nlohmann::ordered_json down = nlohmann::ordered_json::array();
    for (int d : s.down) down.push_back(device_name(s, d));
    j["down_gpus"] = down;
  }
  if (!s.source.empty()) j["source"] = s.source;
  return j.dump();
}

ClusterSpec parse_cluster_json(const std::string& text, const std::string& source,
                               const GpuResolver& resolve_gpu) {
  auto doc = detail::parse_json(text, source);
  detail::JsonCursor c(doc, source);
  check_schema(c, "topoplan.cluster/v1");
  c.warn_unknown_keys({"name", "gpu", "nodes", "server", "tiers", "hosts", "compute_hosts",
                       "down_gpus", "servers"});
  ClusterSpec s;
  s.name = c.string("name");
  s.source = c.opt_string("source").value_or("");
  auto gpu_at = [&](const detail::JsonCursor& at, const std::string& path) {
    if (at.has("gpu") && at.node().at("gpu").is_string())
      return resolve_gpu(at.string("gpu"), source, path);
    return gpu_from(at.at("gpu"));
  };
  if (c.has("servers")) {
    read_server_groups(c, s, gpu_at);
  } else {
    s.gpu = gpu_at(c, "gpu");
    s.nodes =
        static_cast<int>(bounded(c, "nodes", c.int_at_least_or("nodes", 1, 1), Cluster::kMaxGpus));
  }
  auto server = c.at("server");
  server.warn_unknown_keys({"nics", "nic_Gbps", "gpus_per_host"});
  if (server.has("gpus_per_host"))
    s.gpus_per_host = static_cast<int>(
        bounded(server, "gpus_per_host", server.positive_int("gpus_per_host"), kMaxGpusPerServer));
  s.nics_per_server =
      static_cast<int>(bounded(server, "nics", server.positive_int("nics"), kMaxGpusPerServer));
  s.nic_bandwidth = units::from_Gbps(server.number_in("nic_Gbps", 1e-3, 1e8));
  auto tiers = c.at("tiers");
  std::size_t n = tiers.array_size();
  if (n == 0) tiers.fail_here("expected at least one tier (the server)");
  if (n > static_cast<std::size_t>(Cluster::kMaxTiers))
    tiers.fail_here(fmt::format("expected at most {} tiers, got {}", Cluster::kMaxTiers, n));
  for (std::size_t i = 0; i < n; ++i) {
    auto t = tiers.at(i);
    t.warn_unknown_keys({"name", "fanout", "link", "bandwidth_GBps", "latency_us",
                         "oversubscription", "rail_optimized", "in_network_reduction"});
    TierSpec tier;
    tier.name = t.string("name");
    // Tier 0's fan-out is the GPUs per server and must be given; above it 0 means "all".
    tier.fanout = static_cast<int>(
        i == 0 ? bounded(t, "fanout", t.positive_int("fanout"), kMaxGpusPerServer)
               : bounded(t, "fanout", t.int_at_least_or("fanout", 0, 0), Cluster::kMaxGpus));
    if (t.has("link"))
      tier.link = parse_named<Link>(t, "link", kLinkNames);
    else
      tier.link = i == 0 ? Link::nvlink4 : Link::infiniband;
    // From 1 MB/s to 10 PB/s, up to 10 s, up to 1000:1: extreme but finite.
    tier.bandwidth = units::from_GBps(t.number_in("bandwidth_GBps", 1e-3, 1e7));
    tier.latency = units::from_us(t.number_in_or("latency_us", 0, 1e7, 0.0));
    tier.oversubscription = t.number_in_or("oversubscription", 1, 1000, 1.0);
    tier.rails = t.boolean_or("rail_optimized", false);
    if (tier.rails && i != 1)
      t.fail("rail_optimized", "true only on tier 1 (the leaf that joins the servers)");
    if (tier.rails && n < 3)
      t.fail("rail_optimized", "a tier above the rails (the spine that joins them)");
    tier.in_network_reduction = t.boolean_or("in_network_reduction", false);
    if (tier.in_network_reduction && i == 0)
      t.fail("in_network_reduction",
             "true only on a network tier (1 and up; NVLink SHARP inside a server is the link's "
             "calibrated nvls_bw_fraction)");
    s.tiers.push_back(tier);
  }
  read_hosts(c, s);
  detail::read_down_gpus(c, s);
  return s;
}

Cluster::Cluster(ClusterSpec spec, const std::string& source) : spec_(std::move(spec)) {
  if (spec_.tiers.empty()) throw_input(source, "tiers", "expected at least one tier");
  if (spec_.nodes < 1) throw_input(source, "nodes", "expected a positive integer");
  const std::int64_t gpus = static_cast<std::int64_t>(spec_.nodes) * spec_.tiers[0].fanout;
  if (spec_.tiers[0].fanout < 1 || gpus > kMaxGpus)
    throw_input(source, "nodes",
                fmt::format("expected at most {} GPUs in all, got {} servers x {} GPUs", kMaxGpus,
                            spec_.nodes, spec_.tiers[0].fanout));
  gpu_count_ = static_cast<int>(gpus);
  if (spec_.gpus_per_host < 0 ||
      (spec_.gpus_per_host > 0 && spec_.tiers[0].fanout % spec_.gpus_per_host != 0))
    throw_input(source, "server.gpus_per_host",
                fmt::format("expected a divisor of the {} GPUs per server, got {}",
                            spec_.tiers[0].fanout, spec_.gpus_per_host));
  double nic_share = spec_.nics_per_server * spec_.nic_bandwidth / spec_.tiers[0].fanout;
  double path_min = nic_share;
  tier_count_ = 0;
  for (std::size_t k = 0; k < spec_.tiers.size(); ++k) {
    const auto& t = spec_.tiers[k];
    std::int64_t size = k == 0 ? t.fanout : t.fanout == 0 ? gpu_count_ : domain_[k - 1] * t.fanout;
    domain_[k] = std::min<std::int64_t>(size, gpu_count_);
    if (k == 0) {
      bandwidth_[k] = t.bandwidth;
    } else {
      // Traffic that crosses tier k has passed every uplink below it: each oversubscribed tier
      // divides what reaches it, so ratios compound (2:1 at spine and at core: 1/4 at the core).
      path_min = std::min(path_min, t.bandwidth) / t.oversubscription;
      bandwidth_[k] = path_min;
    }
    tier_count_ = static_cast<int>(k) + 1;
    // Rails need the tier above them: GPUs of different indices meet there.
    if (size >= gpu_count_ && !(t.rails && k == 1)) break;
  }
  if (domain_[tier_count_ - 1] < gpu_count_ || spec_.tiers.size() == 0)
    throw_input(source, "nodes",
                fmt::format("{} servers do not fit in the top tier '{}' ({} GPUs); add a tier or "
                            "raise its fanout",
                            spec_.nodes, spec_.tiers.back().name, domain_[tier_count_ - 1]));
  if (spec_.nodes > 1 && spec_.tiers.size() < 2)
    throw_input(source, "tiers", "more than one server needs a tier above the server");
  for (std::size_t k = 0; k < spec_.tiers.size(); ++k) {
    if (!spec_.tiers[k].rails) continue;
    if (k != 1 || spec_.tiers.size() < 3)
      throw_input(source, fmt::format("tiers[{}].rail_optimized", k),
                  "expected true only on tier 1, with a tier above it");
    rail_tier_ = 1;
  }
  if (!spec_.server_groups.empty()) {
    std::int64_t listed = 0;
    for (const auto& g : spec_.server_groups) listed += g.count;
    if (listed != spec_.nodes)
      throw_input(
          source, "servers",
          fmt::format("{} servers listed, but the cluster has {} (--nodes)", listed, spec_.nodes));
    for (std::size_t i = 0; i < spec_.server_groups.size(); ++i)
      for (int k = 0; k < spec_.server_groups[i].count; ++k)
        type_of_server_.push_back(static_cast<std::uint16_t>(i));
    const std::string* type = nullptr;  // mixed: two groups with servers of other GPU types
    for (const auto& g : spec_.server_groups) {
      if (g.absent) continue;
      if (type && *type != g.gpu.name) mixed_ = true;
      type = &g.gpu.name;
    }
    if (spec_.server_groups.size() > 4096)
      throw_input(source, "servers", "expected at most 4096 server groups");
  }
  mark_unusable(source);
}

void Cluster::mark_unusable(const std::string& source) {
  const int per = gpus_per_server();
  std::vector<int> absent;
  int server = 0;
  for (const auto& g : spec_.server_groups) {
    if (g.gpus > per)
      throw_input(source, "servers",
                  fmt::format("expected at most {} GPUs per server (tier 0's fanout), got {}", per,
                              g.gpus));
    for (int k = 0; k < g.count; ++k, ++server)
      for (int slot = g.absent ? 0 : g.gpus > 0 ? g.gpus : per; slot < per; ++slot)
        absent.push_back(server * per + slot);
  }
  if (spec_.down.empty() && absent.empty()) return;
  down_mask_.assign(static_cast<std::size_t>(gpu_count_), 0);
  for (int d : absent) down_mask_[static_cast<std::size_t>(d)] = 1;
  for (int d : spec_.down) {
    if (d < 0 || d >= gpu_count_)
      throw_input(source, "down_gpus",
                  fmt::format("expected GPUs of the cluster's {} servers, got device {} (check "
                              "--nodes)",
                              spec_.nodes, d));
    down_mask_[static_cast<std::size_t>(d)] = 1;
  }
  for (std::uint8_t b : down_mask_) unusable_ += b;
  // Servers by usable GPUs: what tp_capacity counts (the search asks for every plan it checks).
  servers_with_.assign(static_cast<std::size_t>(per) + 1, 0);
  for (int srv = 0; srv < spec_.nodes; ++srv) {
    int up = 0;
    for (int g = 0; g < per; ++g) up += usable(srv * per + g) ? 1 : 0;
    ++servers_with_[static_cast<std::size_t>(up)];
  }
  if (usable_count() == 0) throw_input(source, "down_gpus", "every GPU is down");
}

std::int64_t Cluster::tp_capacity(int tp) const {
  const int per = gpus_per_server();
  if (tp < 1) return 0;
  if (tp > per && tp % per != 0) return usable_count() - usable_count() % tp;
  if (servers_with_.empty()) {  // nothing down or absent
    if (tp > per) return static_cast<std::int64_t>(spec_.nodes) / (tp / per) * tp;
    return static_cast<std::int64_t>(spec_.nodes) * (per / tp) * tp;
  }
  if (tp > per) return servers_with_[static_cast<std::size_t>(per)] / (tp / per) * tp;
  std::int64_t groups = 0;
  for (int up = tp; up <= per; ++up)
    groups += servers_with_[static_cast<std::size_t>(up)] * (up / tp);
  return groups * tp;
}

int Cluster::meet_tier(int a, int b) const {
  const int per = gpus_per_server();
  for (int k = 0; k < tier_count_; ++k) {
    if (k == rail_tier_ && a / per != b / per && a % per != b % per) continue;
    if (a / domain_[k] == b / domain_[k]) return k;
  }
  return tier_count_ - 1;
}

}  // namespace topoplan
