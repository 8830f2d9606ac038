#include "topoplan/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "detail/json_input.hpp"
#include "detail/names.hpp"
#include "topoplan/error.hpp"
#include "topoplan/units.hpp"

namespace topoplan {
namespace {

constexpr std::array<const char*, kArchs> kArchNames{"ampere", "hopper", "blackwell"};
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
  c.warn_unknown_keys({"name", "arch", "bf16_TFLOPs", "fp8_TFLOPs", "memory_GiB", "hbm_TBps"});
  GpuSpec g;
  g.name = c.string("name");
  g.arch = parse_named<Arch>(c, "arch", kArchNames);
  // Physical ranges, a million times past today's parts either way.
  g.peak_flops = units::from_TFLOPs(c.number_in("bf16_TFLOPs", 1e-3, 1e6));
  g.peak_flops_fp8 = units::from_TFLOPs(c.number_in_or("fp8_TFLOPs", 0, 1e6, 0));
  g.memory_bytes = units::from_GiB(c.number_in("memory_GiB", 1e-3, 1e6));
  g.hbm_bandwidth = units::from_TBps(c.number_in("hbm_TBps", 1e-6, 1e4));
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

/// "hosts": distinct non-empty names, at least one per server.
void read_hosts(const detail::JsonCursor& c, ClusterSpec& s) {
  if (!c.has("hosts")) return;
  const auto hosts = c.at("hosts");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < hosts.array_size(); ++i) {
    const auto& v = hosts.node()[i];
    if (!v.is_string() || v.get<std::string>().empty())
      hosts.at(i).fail_here(fmt::format("expected a host name, got {}", v.dump()));
    const std::string h = v.get<std::string>();
    if (!seen.insert(h).second)
      hosts.at(i).fail_here(fmt::format("expected each host once, got '{}' again", h));
    s.hosts.push_back(h);
  }
  if (static_cast<int>(s.hosts.size()) < s.nodes)
    hosts.fail_here(
        fmt::format("expected a host per server ({}), got {}", s.nodes, s.hosts.size()));
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

std::string cluster_json(const ClusterSpec& s) {
  nlohmann::ordered_json j;
  j["schema"] = "topoplan.cluster/v1";
  j["name"] = s.name;
  j["gpu"] = {{"name", s.gpu.name},
              {"arch", to_string(s.gpu.arch)},
              {"bf16_TFLOPs", units::to_TFLOPs(s.gpu.peak_flops)},
              {"fp8_TFLOPs", units::to_TFLOPs(s.gpu.peak_flops_fp8)},
              {"memory_GiB", units::to_GiB(s.gpu.memory_bytes)},
              {"hbm_TBps", units::to_TBps(s.gpu.hbm_bandwidth)}};
  j["nodes"] = s.nodes;
  j["server"] = {{"nics", s.nics_per_server}, {"nic_Gbps", units::to_Gbps(s.nic_bandwidth)}};
  nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
  for (const auto& t : s.tiers) {
    nlohmann::ordered_json o = {{"name", t.name},
                                {"fanout", t.fanout},
                                {"link", to_string(t.link)},
                                {"bandwidth_GBps", units::to_GBps(t.bandwidth)}};
    if (t.latency > 0) o["latency_us"] = units::to_us(t.latency);
    if (t.oversubscription != 1.0) o["oversubscription"] = t.oversubscription;
    tiers.push_back(o);
  }
  j["tiers"] = tiers;
  if (!s.hosts.empty()) j["hosts"] = s.hosts;
  if (!s.source.empty()) j["source"] = s.source;
  return j.dump();
}

ClusterSpec parse_cluster_json(const std::string& text, const std::string& source,
                               const GpuResolver& resolve_gpu) {
  auto doc = detail::parse_json(text, source);
  detail::JsonCursor c(doc, source);
  check_schema(c, "topoplan.cluster/v1");
  c.warn_unknown_keys({"name", "gpu", "nodes", "server", "tiers", "hosts"});
  ClusterSpec s;
  s.name = c.string("name");
  s.source = c.opt_string("source").value_or("");
  if (c.has("gpu") && c.node().at("gpu").is_string())
    s.gpu = resolve_gpu(c.string("gpu"), source, "gpu");
  else
    s.gpu = gpu_from(c.at("gpu"));
  s.nodes =
      static_cast<int>(bounded(c, "nodes", c.int_at_least_or("nodes", 1, 1), Cluster::kMaxGpus));
  auto server = c.at("server");
  server.warn_unknown_keys({"nics", "nic_Gbps"});
  s.nics_per_server = static_cast<int>(bounded(server, "nics", server.positive_int("nics"), 64));
  s.nic_bandwidth = units::from_Gbps(server.number_in("nic_Gbps", 1e-3, 1e8));
  auto tiers = c.at("tiers");
  std::size_t n = tiers.array_size();
  if (n == 0) tiers.fail_here("expected at least one tier (the server)");
  if (n > static_cast<std::size_t>(Cluster::kMaxTiers))
    tiers.fail_here(fmt::format("expected at most {} tiers, got {}", Cluster::kMaxTiers, n));
  for (std::size_t i = 0; i < n; ++i) {
    auto t = tiers.at(i);
    t.warn_unknown_keys(
        {"name", "fanout", "link", "bandwidth_GBps", "latency_us", "oversubscription"});
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
    s.tiers.push_back(tier);
  }
  read_hosts(c, s);
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
    if (size >= gpu_count_) break;
  }
  if (domain_[tier_count_ - 1] < gpu_count_ || spec_.tiers.size() == 0)
    throw_input(source, "nodes",
                fmt::format("{} servers do not fit in the top tier '{}' ({} GPUs); add a tier or "
                            "raise its fanout",
                            spec_.nodes, spec_.tiers.back().name, domain_[tier_count_ - 1]));
  if (spec_.nodes > 1 && spec_.tiers.size() < 2)
    throw_input(source, "tiers", "more than one server needs a tier above the server");
}

int Cluster::meet_tier(int a, int b) const {
  for (int k = 0; k < tier_count_; ++k)
    if (a / domain_[k] == b / domain_[k]) return k;
  return tier_count_ - 1;
}

}  // namespace topoplan
