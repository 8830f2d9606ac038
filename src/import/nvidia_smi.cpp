#include "topoplan/import/nvidia_smi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "detail/words.hpp"
#include "topoplan/error.hpp"
#include "topoplan/units.hpp"

namespace topoplan {
namespace {

bool is_device(const std::string& w, const char* prefix) {
  const std::size_t n = std::char_traits<char>::length(prefix);
  // At most 6 digits: no real index or link count is larger, and std::stoi cannot overflow
  // (found by fuzz_nvidia_smi: "NV99999999999" ended the process).
  return w.size() > n && w.size() <= n + 6 && w.compare(0, n, prefix) == 0 &&
         std::all_of(w.begin() + static_cast<std::ptrdiff_t>(n), w.end(),
                     [](char ch) { return ch >= '0' && ch <= '9'; });
}

bool is_nic(const std::string& w) { return is_device(w, "NIC") || is_device(w, "mlx5_"); }

/// NVLinks in a cell ("NV18" -> 18), 0 for a PCIe path class, -1 for anything else.
int cell_links(const std::string& cell) {
  if (cell == "X" || cell == "PIX" || cell == "PXB" || cell == "PHB" || cell == "NODE" ||
      cell == "SYS")
    return 0;
  if (is_device(cell, "NV")) return std::stoi(cell.substr(2));
  return -1;
}

}  // namespace

int SmiTopology::min_nvlinks() const {
  int least = -1;
  for (int i = 0; i < gpus; ++i)
    for (int j = 0; j < gpus; ++j)
      if (i != j) least = least < 0 ? nvlinks[i][j] : std::min(least, nvlinks[i][j]);
  return std::max(least, 0);
}

SmiTopology parse_nvidia_smi_topo(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  int lineno = 0, header_line = 0;
  std::vector<std::string> columns;  // GPU and NIC columns, in order
  SmiTopology t;
  std::vector<bool> seen;
  while (std::getline(in, line)) {
    ++lineno;
    const auto w = detail::words(line);
    if (w.empty()) continue;
    if (columns.empty()) {  // the header: GPU0 GPU1 ... [NIC0 ...] CPU Affinity ...
      // GPU0 followed by column names (or alone), not by cells: a GPU0 row is no header.
      if (w.front() != "GPU0" || (w.size() > 1 && cell_links(w[1]) >= 0)) continue;
      header_line = lineno;
      for (const auto& c : w) {
        if (!is_device(c, "GPU") && !is_nic(c)) break;
        if (is_device(c, "GPU")) {
          if (!t.nics.empty() || c != fmt::format("GPU{}", t.gpus))
            throw_input(source, fmt::format("line {}", lineno),
                        fmt::format("expected column GPU{} in the header, got '{}'", t.gpus, c));
          ++t.gpus;
        } else {
          t.nics.push_back(c);
        }
        columns.push_back(c);
      }
      t.nvlinks.assign(t.gpus, std::vector<int>(t.gpus, 0));
      t.path.assign(t.gpus, std::vector<std::string>(t.gpus));
      seen.assign(t.gpus, false);
      continue;
    }
    if (!is_device(w.front(), "GPU")) continue;  // NIC rows, the legend
    const int i = std::stoi(w.front().substr(3));
    const std::string where = fmt::format("line {}", lineno);
    if (i >= t.gpus)
      throw_input(source, where,
                  fmt::format("GPU{} is not in the header (GPU0..GPU{})", i, t.gpus - 1));
    if (seen[i]) throw_input(source, where, fmt::format("GPU{} appears twice", i));
    seen[i] = true;
    if (w.size() < columns.size() + 1)
      throw_input(source, where,
                  fmt::format("expected {} cells after GPU{}, got {} (a truncated matrix?)",
                              columns.size(), i, w.size() - 1));
    for (int j = 0; j < t.gpus; ++j) {
      const std::string& cell = w[static_cast<std::size_t>(j) + 1];
      const int links = cell_links(cell);
      if (links < 0 || (i == j) != (cell == "X"))
        throw_input(source, where,
                    fmt::format("GPU{} to GPU{}: expected {}, got '{}'", i, j,
                                i == j ? "X" : "NV<n>, PIX, PXB, PHB, NODE or SYS", cell));
      t.nvlinks[i][j] = links;
      t.path[i][j] = cell;
    }
  }
  if (columns.empty())
    throw_input(source, "",
                "expected an nvidia-smi topo -m matrix: no header line starting with GPU0");
  for (int i = 0; i < t.gpus; ++i)
    if (!seen[i])
      throw_input(source, fmt::format("line {}", header_line),
                  fmt::format("GPU{} is in the header but has no row", i));
  return t;
}

ClusterSpec cluster_from_smi(const SmiTopology& t, const GpuSpec& gpu,
                             const SmiClusterOptions& opt) {
  ClusterSpec s;
  s.name = opt.name;
  s.source = "imported from nvidia-smi topo -m";
  s.gpu = gpu;
  s.nodes = opt.nodes;
  s.nics_per_server = std::max<int>(1, static_cast<int>(t.nics.size()));
  s.nic_bandwidth = opt.nic_bandwidth;
  TierSpec server;
  server.name = "nvlink";
  server.fanout = t.gpus;
  const int links = t.min_nvlinks();
  if (links > 0) {
    // Per link and direction: 25 GB/s for NVLink 3 (A100) and 4 (H100/H200), 50 for 5 (B200).
    server.link = gpu.arch == Arch::ampere   ? Link::nvlink3
                  : gpu.arch == Arch::hopper ? Link::nvlink4
                                             : Link::nvlink5;
    server.bandwidth = links * units::from_GBps(server.link == Link::nvlink5 ? 50 : 25);
  } else {
    // No NVLink between some pair: PCIe x16, 32 GB/s (Gen4, Ampere) or 64 (Gen5) per direction.
    server.name = "pcie";
    server.link = Link::pcie;
    server.bandwidth = units::from_GBps(gpu.arch == Arch::ampere ? 32 : 64);
  }
  s.tiers.push_back(server);
  if (!opt.network.empty()) {
    s.tiers.insert(s.tiers.end(), opt.network.begin(), opt.network.end());
  } else if (opt.nodes > 1) {
    TierSpec net;
    net.name = "leaf";
    net.fanout = 0;
    net.link = Link::infiniband;
    net.bandwidth = s.nics_per_server * s.nic_bandwidth / t.gpus;
    s.tiers.push_back(net);
  }
  return s;
}

}  // namespace topoplan
