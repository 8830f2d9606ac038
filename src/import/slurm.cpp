// Slurm host lists and topology.conf: the switch tree above the servers, and the host order.
#include "topoplan/import/slurm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "topoplan/error.hpp"

namespace topoplan {
namespace {

constexpr std::size_t kMaxHosts = std::size_t{1} << 20;
/// What one host list may expand to, in characters: a few bracket groups multiply quickly
/// ("n[0-99][0-99][0-99]" names a million hosts), and each name is as long as the pattern.
constexpr std::size_t kMaxHostlistBytes = std::size_t{64} << 20;

/// "001-064,070" inside brackets: each number with the width its lower bound was written in.
std::vector<std::string> expand_ranges(const std::string& body, const std::string& source,
                                       const std::string& expr) {
  std::vector<std::string> out;
  std::istringstream in(body);
  for (std::string part; std::getline(in, part, ',');) {
    const auto dash = part.find('-');
    const std::string lo = part.substr(0, dash);
    const std::string hi = dash == std::string::npos ? lo : part.substr(dash + 1);
    auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 9 &&
             std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(c); });
    };
    if (!digits(lo) || !digits(hi) || std::stol(hi) < std::stol(lo))
      throw_input(
          source, "",
          fmt::format("expected ranges like 001-064 inside [...] of '{}', got '{}'", expr, part));
    for (long n = std::stol(lo); n <= std::stol(hi); ++n) {
      if (out.size() >= kMaxHosts)
        throw_input(source, "", fmt::format("'{}' names more than {} hosts", expr, kMaxHosts));
      out.push_back(fmt::format("{:0{}}", n, lo.size()));
    }
  }
  return out;
}

/// Host names and the characters they hold, both bounded (kMaxHosts, kMaxHostlistBytes).
struct Names {
  std::vector<std::string> list;
  std::size_t bytes = 0;
  void add(std::string n) {
    bytes += n.size();
    list.push_back(std::move(n));
  }
};

/// One comma-free item: the first bracket's names, each followed by the rest expanded.
void expand_item(const std::string& item, const std::string& source, const std::string& expr,
                 Names& out) {
  const auto open = item.find('[');
  if (open == std::string::npos) {
    if (item.find(']') != std::string::npos)
      throw_input(source, "", fmt::format("expected '[' before ']' in '{}'", expr));
    if (!item.empty()) out.add(item);
    return;
  }
  const auto close = item.find(']', open);
  if (close == std::string::npos)
    throw_input(source, "", fmt::format("expected ']' to close '[' in '{}'", expr));
  Names tail;
  expand_item(item.substr(close + 1), source, expr, tail);
  std::vector<std::string>& rest = tail.list;
  if (rest.empty()) rest.push_back("");
  const auto names = expand_ranges(item.substr(open + 1, close - open - 1), source, expr);
  // Counted before a name is built: each side is at most kMaxHosts, so the product fits.
  const std::size_t count = names.size() * rest.size();
  if (out.list.size() + count > kMaxHosts)
    throw_input(source, "", fmt::format("'{}' names more than {} hosts", expr, kMaxHosts));
  const std::string prefix = item.substr(0, open);
  auto longest = [](const std::vector<std::string>& v) {
    std::size_t m = 0;
    for (const auto& x : v) m = std::max(m, x.size());
    return m;
  };
  if (out.bytes + count * (prefix.size() + longest(names) + longest(rest)) > kMaxHostlistBytes)
    throw_input(source, "",
                fmt::format("'{}' expands to more than {} MiB of host names", expr,
                            kMaxHostlistBytes >> 20));
  for (const auto& n : names)
    for (const auto& r : rest) out.add(prefix + n + r);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& expr, const std::string& source) {
  Names out;
  std::string item;
  int depth = 0;
  for (char c : expr + ",") {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      expand_item(item, source, expr, out);
      item.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      item += c;
    }
  }
  if (depth != 0) throw_input(source, "", fmt::format("expected ']' to close '[' in '{}'", expr));
  if (out.list.empty()) throw_input(source, "", fmt::format("expected host names, got '{}'", expr));
  return std::move(out.list);
}

std::vector<SlurmSwitch> parse_slurm_topology(const std::string& text, const std::string& source) {
  std::vector<SlurmSwitch> out;
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    SlurmSwitch s;
    s.line = n;
    const std::string where = fmt::format("{}: line {}", source, n);
    for (std::string w; words >> w;) {
      // Names become JSON strings (hosts): printable ASCII only, as host names are.
      require_printable_ascii(w, source, fmt::format("line {}", n));
      const auto eq = w.find('=');
      if (eq == std::string::npos)
        throw_input(source, fmt::format("line {}", n),
                    fmt::format("expected Key=Value, got '{}'", w));
      const std::string key = lower(w.substr(0, eq)), value = w.substr(eq + 1);
      if (key == "switchname") s.name = value;
      if (key == "blockname") s.name = value, s.block = true;
      if (key == "nodes") s.nodes = expand_hostlist(value, where);
      if (key == "switches") s.switches = expand_hostlist(value, where);
    }
    if (s.name.empty() && (s.nodes.size() + s.switches.size()) == 0) continue;
    if (s.name.empty())
      throw_input(source, fmt::format("line {}", n),
                  "expected SwitchName=... or BlockName=... first on the line");
    if (s.block && (s.nodes.empty() || !s.switches.empty()))
      throw_input(source, fmt::format("line {}", n),
                  fmt::format("block {}: expected Nodes=... and no Switches=...", s.name));
    if (s.nodes.empty() == s.switches.empty())
      throw_input(source, fmt::format("line {}", n),
                  fmt::format("switch {}: expected Nodes=... (a leaf) or Switches=..., one of them",
                              s.name));
    out.push_back(std::move(s));
  }
  if (out.empty())
    throw_input(source, "", "expected SwitchName=... or BlockName=... lines (topology.conf)");
  return out;
}

namespace {

struct Tree {
  std::map<std::string, const SlurmSwitch*> by_name;
  std::map<std::string, int> level;  ///< leaves 1, their parents 2, ...
};

Tree index_tree(const std::vector<SlurmSwitch>& tree, const std::string& source) {
  Tree t;
  std::set<std::string> hosts, children;
  for (const auto& s : tree) {
    if (!t.by_name.emplace(s.name, &s).second)
      throw_input(source, fmt::format("line {}", s.line),
                  fmt::format("switch {} is defined twice", s.name));
    for (const auto& h : s.nodes)
      if (!hosts.insert(h).second)
        throw_input(source, fmt::format("line {}", s.line),
                    fmt::format("host {} is under two switches", h));
  }
  std::function<int(const SlurmSwitch&, int)> level_of = [&](const SlurmSwitch& s, int depth) {
    if (depth > 16)
      throw_input(source, fmt::format("line {}", s.line),
                  fmt::format("switch {}: expected a tree, found a cycle", s.name));
    if (!s.nodes.empty()) return t.level[s.name] = 1;
    int most = 0;
    for (const auto& c : s.switches) {
      const auto it = t.by_name.find(c);
      if (it == t.by_name.end())
        throw_input(source, fmt::format("line {}", s.line),
                    fmt::format("switch {}: Switches names {}, which is not defined", s.name, c));
      most = std::max(most, level_of(*it->second, depth + 1));
    }
    return t.level[s.name] = most + 1;
  };
  for (const auto& s : tree) (void)level_of(s, 0);
  return t;
}

/// Fan-out per level: the most children any switch of that level has.
std::vector<int> level_fanouts(const std::vector<SlurmSwitch>& tree, const Tree& t, int top) {
  std::vector<int> fanout(static_cast<std::size_t>(top) + 1, 0);
  for (const auto& s : tree) {
    const int n = static_cast<int>(s.nodes.empty() ? s.switches.size() : s.nodes.size());
    int& f = fanout[static_cast<std::size_t>(t.level.at(s.name))];
    f = std::max(f, n);
  }
  return fanout;
}

/// BlockName lines: one server of `base` per block, the block's nodes its hosts.
ClusterSpec cluster_from_blocks(const std::vector<SlurmSwitch>& lines, const ClusterSpec& base,
                                const std::string& source) {
  const int per_server = base.tiers[0].fanout, per_host = base.gpus_per_host;
  const int hosts_per_server = topoplan::hosts_per_server(base);
  if (hosts_per_server == 1)
    throw_input(source, "",
                fmt::format("BlockName lines name the hosts of NVLink domains: expected a "
                            "--cluster whose servers are several hosts (server.gpus_per_host, as "
                            "gb200-nvl72), got {} ({} GPUs per server, one host each)",
                            base.name, per_server));
  ClusterSpec out = base;
  out.hosts.clear();
  out.compute_hosts.clear();
  out.server_groups.clear();
  out.down.clear();
  std::set<std::string> names, blocks;
  for (const auto& b : lines) {
    if (!b.block) continue;
    if (!blocks.insert(b.name).second)
      throw_input(source, fmt::format("line {}", b.line),
                  fmt::format("block {} is defined twice", b.name));
    const int n = static_cast<int>(b.nodes.size());
    if (n > hosts_per_server)
      throw_input(source, fmt::format("line {}", b.line),
                  fmt::format("block {} holds {} hosts, more than the {} of a {} server", b.name, n,
                              hosts_per_server, base.name));
    const int server = static_cast<int>(out.hosts.size());
    // Bounded before the padding is built: a file of one-node blocks would otherwise pad each.
    if ((std::int64_t{server} + 1) * per_server > Cluster::kMaxGpus)
      throw_input(source, fmt::format("line {}", b.line),
                  fmt::format("more than {} GPUs in the blocks", Cluster::kMaxGpus));
    out.hosts.push_back(b.name);
    for (int k = 0; k < hosts_per_server; ++k) {
      const std::string h =
          k < n ? b.nodes[static_cast<std::size_t>(k)] : fmt::format("absent-{}-{}", b.name, k - n);
      if (!names.insert(h).second || h == b.name)
        throw_input(source, fmt::format("line {}", b.line),
                    fmt::format("host {} is named twice (blocks and hosts)", h));
      out.compute_hosts.push_back(h);
      for (int g = 0; k >= n && g < per_host; ++g)
        out.down.push_back(server * per_server + k * per_host + g);
    }
  }
  if (blocks.size() < lines.size())
    warn_input(source, "",
               "SwitchName lines are not used beside BlockName lines: the tiers above the "
               "NVLink domains are --cluster's");
  for (const auto& h : out.hosts)
    if (names.count(h)) throw_input(source, "", fmt::format("block {} is also a host's name", h));
  out.nodes = static_cast<int>(out.hosts.size());
  out.source = "imported from Slurm topology.conf blocks (" + source + "); servers and links as " +
               base.name;
  return out;
}

}  // namespace

ClusterSpec cluster_from_slurm(const std::vector<SlurmSwitch>& tree, const ClusterSpec& base,
                               const std::string& source) {
  if (std::any_of(tree.begin(), tree.end(), [](const SlurmSwitch& s) { return s.block; }))
    return cluster_from_blocks(tree, base, source);
  const Tree t = index_tree(tree, source);
  std::set<std::string> below;
  for (const auto& s : tree) below.insert(s.switches.begin(), s.switches.end());
  std::vector<const SlurmSwitch*> roots;
  for (const auto& s : tree)
    if (!below.count(s.name)) roots.push_back(&s);
  const int top = t.level.at(roots.front()->name);
  // Every root as high as the first: then no switch is above `top`.
  for (const auto* r : roots)
    if (t.level.at(r->name) != top)
      throw_input(source, fmt::format("line {}", r->line),
                  fmt::format("switch {} is a root of another height than {}", r->name,
                              roots.front()->name));
  // A switch with fewer children than the most of its level is padded with absent servers
  // (server groups with absent: true), so every leaf and spine keeps its place.
  const std::vector<int> fanout = level_fanouts(tree, t, top);
  std::vector<int> servers_below(static_cast<std::size_t>(top) + 1, 1);  // per switch of a level
  for (int lv = 1; lv <= top; ++lv)
    servers_below[static_cast<std::size_t>(lv)] =
        servers_below[static_cast<std::size_t>(lv) - 1] * fanout[static_cast<std::size_t>(lv)];
  ClusterSpec out = base;
  out.hosts.clear();
  out.server_groups.clear();
  std::vector<ServerGroup> groups;
  auto add = [&](int count, bool absent) {
    if (count == 0) return;
    if (!groups.empty() && groups.back().absent == absent) {
      groups.back().count += count;
      return;
    }
    ServerGroup g;
    g.count = count;
    g.gpu = base.gpu;
    g.absent = absent;
    groups.push_back(g);
  };
  int padded = 0;
  std::function<void(const SlurmSwitch&)> walk = [&](const SlurmSwitch& s) {
    const int lv = t.level.at(s.name);
    const int n = static_cast<int>(s.nodes.empty() ? s.switches.size() : s.nodes.size());
    out.hosts.insert(out.hosts.end(), s.nodes.begin(), s.nodes.end());
    add(static_cast<int>(s.nodes.size()), false);
    for (const auto& c : s.switches) {
      if (t.level.at(c) != lv - 1)
        throw_input(source, fmt::format("line {}", s.line),
                    fmt::format("switch {}: {} is not one level below it (topoplan models a "
                                "tree whose leaves are all as deep)",
                                s.name, c));
      walk(*t.by_name.at(c));
    }
    const int missing = (fanout[static_cast<std::size_t>(lv)] - n) *
                        servers_below[static_cast<std::size_t>(lv) - 1];
    for (int k = 0; k < missing; ++k) out.hosts.push_back(fmt::format("absent-{}-{}", s.name, k));
    add(missing, true);
    padded += missing;
  };
  for (const auto* r : roots) walk(*r);
  if (padded > 0) out.server_groups = std::move(groups);
  out.nodes = static_cast<int>(out.hosts.size());
  out.tiers.resize(1);  // the server tier from base; the switch levels above it
  for (int lv = 1; lv <= top; ++lv) {
    TierSpec tier =
        base.tiers[std::min<std::size_t>(static_cast<std::size_t>(lv), base.tiers.size() - 1)];
    tier.name = lv == 1 ? "leaf" : lv == 2 ? "spine" : fmt::format("core{}", lv - 2);
    tier.fanout = fanout[static_cast<std::size_t>(lv)];
    out.tiers.push_back(tier);
  }
  if (roots.size() > 1) {  // several trees: joined above by the top tier's links
    TierSpec tier = out.tiers.back();
    tier.name = "top";
    tier.fanout = 0;
    out.tiers.push_back(tier);
  }
  out.source = "imported from Slurm topology.conf (" + source + "); links as " + base.name;
  return out;
}

}  // namespace topoplan
