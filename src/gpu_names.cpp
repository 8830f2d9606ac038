/// Naming GPUs: SERVER, SERVER:GPU, HOST and HOST:GPU entries (server and tray names, or
/// indices) as the cluster file's "down_gpus" and the --exclude flag take them, and the
/// SERVER:GPU names reports print.
#include "detail/gpu_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <variant>

#include "topoplan/error.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {
namespace {

/// A decimal index (digits only, at most 9), or nullopt.
std::optional<std::int64_t> parse_index(const std::string& t) {
  if (t.empty() || t.size() > 9 ||
      !std::all_of(t.begin(), t.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return std::nullopt;
  return std::stoll(t);
}

using Devices = std::variant<std::vector<int>, std::string>;

/// The devices of a unit of `count` GPUs from device `first` that `entry` names: all of them
/// ("NAME"), or one ("NAME:GPU", GPU counted in the unit), or the reason it names none.
Devices devices_in(std::int64_t first, int count, const std::string& entry) {
  const auto colon = entry.find(':');
  std::vector<int> out;
  if (colon == std::string::npos) {
    for (int g = 0; g < count; ++g) out.push_back(static_cast<int>(first) + g);
    return out;
  }
  const auto gpu = parse_index(entry.substr(colon + 1));
  if (!gpu || *gpu >= count)
    return fmt::format("expected a GPU index below {} after '{}:', got '{}'", count,
                       entry.substr(0, colon), entry);
  out.push_back(static_cast<int>(first + *gpu));
  return out;
}

/// The devices one SERVER or SERVER:GPU entry names, or HOST or HOST:GPU with HOST one of
/// compute_hosts (the GPU counted on that host), or the reason it names none.
Devices devices_of_entry(const ClusterSpec& s, const std::string& entry) {
  const int per_server = s.tiers.empty() ? 0 : s.tiers[0].fanout;
  const std::string name = entry.substr(0, entry.find(':'));
  const auto host = std::find(s.compute_hosts.begin(), s.compute_hosts.end(), name);
  if (host != s.compute_hosts.end() && s.gpus_per_host > 0) {
    const std::int64_t first = (host - s.compute_hosts.begin()) * std::int64_t{s.gpus_per_host};
    if (first >= std::int64_t{s.nodes} * per_server)
      return fmt::format("expected a host of the cluster's {} servers, got '{}'", s.nodes, entry);
    return devices_in(first, s.gpus_per_host, entry);
  }
  int node = -1;
  if (auto it = std::find(s.hosts.begin(), s.hosts.end(), name); it != s.hosts.end())
    node = static_cast<int>(it - s.hosts.begin());
  else if (auto n = parse_index(name); n && *n < s.nodes)
    node = static_cast<int>(*n);
  if (node < 0 || node >= s.nodes)
    return fmt::format(
        "expected SERVER or SERVER:GPU with SERVER a host name{} or an index below "
        "{}, got '{}'",
        s.hosts.empty() ? " (the cluster has none)" : "", s.nodes, entry);
  return devices_in(std::int64_t{node} * per_server, per_server, entry);
}

void add_devices(ClusterSpec& s, const std::vector<int>& devices) {
  s.down.insert(s.down.end(), devices.begin(), devices.end());
  std::sort(s.down.begin(), s.down.end());
  s.down.erase(std::unique(s.down.begin(), s.down.end()), s.down.end());
}

}  // namespace

void detail::read_down_gpus(const JsonCursor& c, ClusterSpec& s) {
  if (!c.has("down_gpus")) return;
  const auto list = c.at("down_gpus");
  for (std::size_t i = 0; i < list.array_size(); ++i) {
    const auto& v = list.node()[i];
    if (!v.is_string())
      list.at(i).fail_here(fmt::format("expected \"SERVER\" or \"SERVER:GPU\", got {}", v.dump()));
    auto devices = devices_of_entry(s, v.get<std::string>());
    if (auto* why = std::get_if<std::string>(&devices)) list.at(i).fail_here(*why);
    add_devices(s, std::get<std::vector<int>>(devices));
  }
}

void add_down_gpus(ClusterSpec& spec, const std::string& list, const std::string& what) {
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string entry = list.substr(start, end - start);
    auto devices = devices_of_entry(spec, entry);
    if (auto* why = std::get_if<std::string>(&devices)) throw_input(what, "", *why);
    add_devices(spec, std::get<std::vector<int>>(devices));
    start = end + 1;
  }
}

std::string device_name(const ClusterSpec& spec, int device) {
  const int per_host = spec.gpus_per_host;
  if (per_host > 0 && !spec.compute_hosts.empty() &&
      device / per_host < static_cast<int>(spec.compute_hosts.size()))
    return fmt::format("{}:{}", spec.compute_hosts[static_cast<std::size_t>(device / per_host)],
                       device % per_host);
  const int per = spec.tiers.empty() ? 1 : spec.tiers[0].fanout;
  const int node = device / per;
  const std::string server = node < static_cast<int>(spec.hosts.size())
                                 ? spec.hosts[static_cast<std::size_t>(node)]
                                 : std::to_string(node);
  return fmt::format("{}:{}", server, device % per);
}

}  // namespace topoplan
