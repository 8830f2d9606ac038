// Importers: nvidia-smi topo -m (issue 10).
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "helpers.hpp"
#include "topoplan/error.hpp"
#include "topoplan/import/nvidia_smi.hpp"

using namespace topoplan;

namespace {

std::string data(const std::string& name) {
  std::ifstream in(std::string(TOPOPLAN_TEST_DATA) + "/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("nvidia-smi topo -m: newer and older driver layouts, NVLink and PCIe servers") {
  // DGX H100 layout: spaces, a preface line, NIC0..7 with a NIC legend, NUMA columns.
  const SmiTopology h = parse_nvidia_smi_topo(data("nvidia-smi/dgx-h100.txt"), "h100");
  CHECK(h.gpus == 8);
  CHECK(h.nics.size() == 8);
  CHECK(h.nvlinks[0][7] == 18);
  CHECK(h.path[3][3] == "X");
  CHECK(h.min_nvlinks() == 18);
  // Older driver: tabs, mlx5_ columns, " X " self cells, A100 NV12.
  const SmiTopology a = parse_nvidia_smi_topo(data("nvidia-smi/dgx-a100-old-driver.txt"), "a100");
  CHECK(a.gpus == 8);
  CHECK(a.nics == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"});
  CHECK(a.min_nvlinks() == 12);
  // No NVLink at all: a PCIe server.
  const SmiTopology p = parse_nvidia_smi_topo(data("nvidia-smi/pcie-4gpu.txt"), "pcie");
  CHECK(p.gpus == 4);
  CHECK(p.min_nvlinks() == 0);
  CHECK(p.path[0][1] == "PIX");
  // The server tier: NVLink generation from the GPU (A100: NVLink 3, 12 x 25 GB/s = 300).
  SmiClusterOptions opt;
  opt.nodes = 4;
  const ClusterSpec ca = cluster_from_smi(a, load_gpu("a100-80gb", "test"), opt);
  CHECK(ca.tiers[0].link == Link::nvlink3);
  CHECK(ca.tiers[0].bandwidth == Approx(300e9));
  CHECK(ca.nics_per_server == 4);
  CHECK(ca.tiers.size() == 2);  // one network tier by default
  const ClusterSpec cp = cluster_from_smi(p, load_gpu("h100-sxm", "test"), opt);
  CHECK(cp.tiers[0].link == Link::pcie);
  CHECK(cp.tiers[0].bandwidth == Approx(64e9));
  const ClusterSpec ch = cluster_from_smi(h, load_gpu("h100-sxm", "test"), opt);
  CHECK(ch.tiers[0].bandwidth == Approx(450e9));
  CHECK(Cluster(ch, "h").gpu_count() == 32);
}

TEST_CASE("nvidia-smi topo -m: malformed matrices are one clear line naming the line") {
  const auto err = [](const std::string& file) {
    try {
      (void)parse_nvidia_smi_topo(data("bad/" + file), file);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err("smi-truncated.txt") ==
        "smi-truncated.txt: line 2: GPU4 is in the header but has no row");
  CHECK(err("smi-bad-cell.txt") ==
        "smi-bad-cell.txt: line 5: GPU2 to GPU1: expected NV<n>, PIX, PXB, PHB, NODE or SYS, got "
        "'NVX'");
  CHECK(err("smi-duplicate.txt") == "smi-duplicate.txt: line 4: GPU0 appears twice");
  CHECK(err("smi-no-header.txt") ==
        "smi-no-header.txt: expected an nvidia-smi topo -m matrix: no header line starting with "
        "GPU0");
  CHECK(err("smi-short-row.txt") ==
        "smi-short-row.txt: line 4: expected 16 cells after GPU1, got 4 (a truncated matrix?)");
}
