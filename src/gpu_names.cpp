/// Naming GPUs: SERVER, SERVER:GPU, HOST and HOST:GPU entries (server and tray names, or
/// indices) as the cluster file's "down_gpus" and the --exclude flag take them, and the names
/// (and lists of them) reports print.
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

/// Whether GPUs are named by host (the cluster names an NVL72 rack's trays), not by server.
bool names_trays(const ClusterSpec& s) { return s.gpus_per_host > 0 && !s.compute_hosts.empty(); }

/// The GPUs one name covers: a tray's where names_trays, else a server's.
int gpus_per_name(const ClusterSpec& s) {
  return names_trays(s) ? s.gpus_per_host : s.tiers.empty() ? 1 : s.tiers[0].fanout;
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
  const int per = gpus_per_name(spec);
  const auto unit = static_cast<std::size_t>(device / per);
  const std::vector<std::string>& names = names_trays(spec) ? spec.compute_hosts : spec.hosts;
  const std::string name = unit < names.size() ? names[unit] : std::to_string(unit);
  return fmt::format("{}:{}", name, device % per);
}

std::string devices_string(const ClusterSpec& spec, std::vector<int> devices, int limit) {
  std::sort(devices.begin(), devices.end());
  const bool trays = names_trays(spec);
  const int per = gpus_per_name(spec);
  std::string out;
  int units = 0;
  std::size_t i = 0;
  while (i < devices.size()) {
    const int unit = devices[i] / per;
    std::string ranges;
    while (i < devices.size() && devices[i] / per == unit) {
      std::size_t k = i;
      while (k + 1 < devices.size() && devices[k + 1] == devices[k] + 1 &&
             devices[k + 1] / per == unit)
        ++k;
      const int a = devices[i] % per, b = devices[k] % per;
      if (!ranges.empty()) ranges += ',';
      ranges += a == b ? std::to_string(a) : fmt::format("{}-{}", a, b);
      i = k + 1;
    }
    if (units < limit) {
      const std::string name = device_name(spec, unit * per);
      if (!out.empty()) out += ' ';
      out.append(name, 0, name.rfind(':'));
      out += ':';
      out += ranges;
    }
    ++units;
  }
  if (units > limit)
    out += fmt::format(" and {} more {}", units - limit, trays ? "hosts" : "servers");
  return out;
}

}  // namespace topoplan
