#include "topoplan/rank_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "detail/json_input.hpp"
#include "topoplan/error.hpp"
#include "topoplan/import/slurm.hpp"

namespace topoplan {

int host_count(const Cluster& c) { return c.spec().nodes * hosts_per_server(c.spec()); }

RankTable build_rank_table(const Cluster& c, const Mapping& m, std::vector<std::string> hosts) {
  RankTable t;
  const int per_server = c.gpus_per_server();
  t.gpus_per_node = c.gpus_per_host();
  const int blocks = static_cast<int>((m.world() + t.gpus_per_node - 1) / t.gpus_per_node);
  const int host_n = host_count(c);
  if (hosts.empty())
    for (int n = 0; n < host_n; ++n) hosts.push_back(fmt::format("node{:03d}", n));
  t.hosts = std::move(hosts);
  std::vector<int> next_local(static_cast<std::size_t>(host_n), 0);
  t.ranks.resize(static_cast<std::size_t>(m.world()));
  for (std::int64_t r = 0; r < m.world(); ++r) {
    RankEntry& e = t.ranks[r];
    e.rank = static_cast<int>(r);
    const int dev = m.device(r);
    e.node = dev / per_server;
    e.gpu = dev % per_server;
    e.host = dev / t.gpus_per_node;  // a host's GPUs are consecutive within its server
    e.host_gpu = dev % t.gpus_per_node;
    e.local_rank = next_local[e.host]++;
    for (Dim d : kDefaultOrder) e.coord[d] = m.coord(r, d);
    t.gpus_permuted = t.gpus_permuted || e.local_rank != e.host_gpu;
  }
  // Host-contiguous: ranks k*g .. k*g+g-1 all on one host, for every block k.
  t.node_contiguous = m.world() % t.gpus_per_node == 0;
  for (int k = 0; t.node_contiguous && k < blocks; ++k) {
    const int host = t.ranks[static_cast<std::size_t>(k) * t.gpus_per_node].host;
    for (int i = 0; i < t.gpus_per_node; ++i)
      if (t.ranks[static_cast<std::size_t>(k) * t.gpus_per_node + i].host != host)
        t.node_contiguous = false;
    if (t.node_contiguous) t.node_rank_host.push_back(t.hosts[host]);
  }
  if (!t.node_contiguous) t.node_rank_host.clear();
  return t;
}

std::vector<int> launch_ranks(const Mapping& m) {
  std::vector<std::pair<int, int>> by_device;  // (device, rank)
  by_device.reserve(static_cast<std::size_t>(m.world()));
  for (std::int64_t r = 0; r < m.world(); ++r)
    by_device.emplace_back(m.device(r), static_cast<int>(r));
  std::sort(by_device.begin(), by_device.end());
  std::vector<int> out(by_device.size());
  for (std::size_t i = 0; i < by_device.size(); ++i)
    out[static_cast<std::size_t>(by_device[i].second)] = static_cast<int>(i);
  return out;
}

std::vector<int> devices_of_ranks(const Cluster& c, const std::vector<int>& node_of_rank,
                                  const std::vector<int>& gpu_of_rank, const std::string& source) {
  const int g = c.gpus_per_server();
  const int nodes = c.spec().nodes;
  std::vector<int> devices(node_of_rank.size());
  // Indexed by device over the whole cluster, not by the GPUs in use: a subset placement may
  // name any GPU.
  std::vector<int> owner(static_cast<std::size_t>(c.gpu_count()), -1);
  for (std::size_t r = 0; r < devices.size(); ++r) {
    const int node = node_of_rank[r], gpu = gpu_of_rank[r];
    if (node < 0 || node >= nodes)
      throw_input(source, fmt::format("ranks[rank {}].node", r),
                  fmt::format("expected a node from 0 to {}, got {}", nodes - 1, node));
    if (gpu < 0 || gpu >= g)
      throw_input(source, fmt::format("ranks[rank {}].gpu", r),
                  fmt::format("expected a GPU index from 0 to {}, got {}", g - 1, gpu));
    const int dev = node * g + gpu;
    if (!c.usable(dev))
      throw_input(
          source, fmt::format("ranks[rank {}]", r),
          fmt::format("node {} gpu {} is down ({})", node, gpu, device_name(c.spec(), dev)));
    if (owner[static_cast<std::size_t>(dev)] >= 0)
      throw_input(source, fmt::format("ranks[rank {}]", r),
                  fmt::format("node {} gpu {} is already rank {}", node, gpu,
                              owner[static_cast<std::size_t>(dev)]));
    owner[static_cast<std::size_t>(dev)] = static_cast<int>(r);
    devices[r] = dev;
  }
  return devices;
}

std::vector<std::string> parse_hosts(const std::string& text, const std::string& source, int nodes,
                                     const char* unit) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    auto e = line.find_last_not_of(" \t\r");
    std::string host = line.substr(b, e - b + 1);
    if (host.find_first_of(" \t") != std::string::npos)
      throw_input(source, fmt::format("line {}", lineno),
                  fmt::format("expected one hostname, got '{}'", host));
    require_printable_ascii(host, source, fmt::format("line {}", lineno));
    if (!seen.insert(host).second)
      throw_input(source, fmt::format("line {}", lineno),
                  fmt::format("host '{}' appears twice", host));
    out.push_back(host);
  }
  if (static_cast<int>(out.size()) < nodes)
    throw_input(source, "",
                fmt::format("expected {} hostnames (one per {}), got {}", nodes, unit, out.size()));
  out.resize(static_cast<std::size_t>(nodes));
  return out;
}

std::vector<std::string> load_hosts_file(const std::string& path, int nodes, const char* unit) {
  return parse_hosts(detail::read_text_file(path), path, nodes, unit);
}

std::vector<std::string> load_hosts(const std::string& file_or_hostlist, int nodes,
                                    const char* unit) {
  if (std::filesystem::exists(file_or_hostlist))
    return load_hosts_file(file_or_hostlist, nodes, unit);
  if (file_or_hostlist.find_first_of("[,") == std::string::npos)
    throw_input("--hosts", "",
                fmt::format("'{}' is neither a file nor a host list expression (gpu[001-016])",
                            file_or_hostlist));
  std::string lines;
  for (const auto& h : expand_hostlist(file_or_hostlist, "--hosts")) lines += h + "\n";
  return parse_hosts(lines, "--hosts", nodes, unit);
}

}  // namespace topoplan
