// Importers: nvidia-smi topo -m, NCCL topology dumps, Slurm topology.conf and nccl-tests
// logs (issue 10).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "helpers.hpp"
#include "topoplan/error.hpp"
#include "topoplan/import/nccl_tests.hpp"
#include "topoplan/import/nccl_xml.hpp"
#include "topoplan/import/nvidia_smi.hpp"
#include "topoplan/import/slurm.hpp"
#include "topoplan/nccl_fit.hpp"
#include "topoplan/presets.hpp"

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

namespace {

/// nccl-tests output (2.13+ layout) for an all-reduce whose time is exactly latency + bus
/// bytes / bus bandwidth: the log a cluster with those two figures would print.
std::string synthetic_all_reduce(int ranks, int hosts, double latency_s, double busbw) {
  std::string text = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 4(factor)\n#\n";
  text += "# Using devices\n";
  for (int r = 0; r < ranks; ++r)
    text += fmt::format("#  Rank {:2d} Group  0 Pid {:6d} on node{:02d} device {:2d} [0x00] H100\n",
                        r, 1000 + r, r / (ranks / hosts), r % (ranks / hosts));
  text +=
      "#       size         count      type   redop    root     time   algbw   busbw #wrong"
      "     time   algbw   busbw #wrong\n";
  const double factor = 2.0 * (ranks - 1) / ranks;
  for (double s = 8; s <= 8589934592.0; s *= 4) {
    const double t = latency_s + s * factor / busbw;
    text += fmt::format(
        "{:12.0f} {:13.0f} float sum -1 {:8.2f} {:7.2f} {:7.2f} 0 {:8.2f} {:7.2f} "
        "{:7.2f} 0\n",
        s, s / 4, t * 1e6, s / t / 1e9, s * factor / t / 1e9, t * 1e6, s / t / 1e9,
        s * factor / t / 1e9);
  }
  return text;
}

}  // namespace

TEST_CASE("nccl-tests: the real 2.13 layout and the older one parse every row") {
  const NcclTestLog real = parse_nccl_tests(data("nccl-tests/a3mega-2x8-h100-all_reduce_perf.txt"),
                                            "a3mega-2x8-h100-all_reduce_perf.txt");
  CHECK(real.rows.size() == 31);
  CHECK(real.ranks == 16);
  CHECK(real.nodes == 2);
  CHECK(real.op == NcclOp::all_reduce);
  CHECK(real.rows.back().bytes == 8589934592.0);
  CHECK(real.rows.back().time_s == Approx(47535e-6));
  CHECK(real.rows.back().busbw == Approx(338.82e9));
  // Without the name, busbw / algbw = 2(n-1)/n tells an all-reduce.
  CHECK(parse_nccl_tests(data("nccl-tests/a3mega-2x8-h100-all_reduce_perf.txt"), "log.txt").op ==
        NcclOp::all_reduce);
  const NcclTestLog old = parse_nccl_tests(data("nccl-tests/old-layout-8xa100-all_reduce_perf.txt"),
                                           "old.txt", "all_reduce");
  CHECK(old.rows.size() == 10);
  CHECK(old.ranks == 8);
  CHECK(old.nodes == 1);
  CHECK(old.rows.front().time_s == Approx(33.70e-6));
}

TEST_CASE("nccl-tests: a log made from known latency and bandwidth gives them back within 5%") {
  struct Case {
    int ranks, hosts;
    double latency_s, busbw;
    const char* key;
  };
  for (const Case k : {Case{8, 1, 25e-6, 360e9, "link.nvlink4.bw_fraction"},
                       Case{16, 2, 60e-6, 300e9, "link.infiniband.bw_fraction"},
                       Case{32, 4, 90e-6, 250e9, "link.infiniband.bw_fraction"}}) {
    CAPTURE(k.ranks, k.hosts);
    const std::string text = synthetic_all_reduce(k.ranks, k.hosts, k.latency_s, k.busbw);
    Calibration cal;
    const ClusterSpec spec = load_cluster("dgx-h100", "test");
    const auto fits = fit_nccl_tests(spec, cal, {parse_nccl_tests(text, "all_reduce_perf.txt")});
    REQUIRE(fits.size() == 1);
    const NcclFit& f = fits.front();
    CHECK(f.tier == (k.hosts == 1 ? 0 : 1));
    const NcclFitRow& smallest = f.rows.front();
    const NcclFitRow& largest = f.rows.back();
    const double factor = 2.0 * (k.ranks - 1) / k.ranks;
    CHECK(smallest.predicted_s == Approx(k.latency_s).epsilon(0.05));
    CHECK(largest.bytes * factor / largest.predicted_s == Approx(k.busbw).epsilon(0.05));
    bool named = false;
    for (const auto& [key, value] : f.constants) named = named || key == k.key;
    CHECK(named);
    // The constants written reproduce the fit when read back as a calibration file.
    Calibration again;
    apply_calibration_json(nccl_fit_calibration_json(fits), "fit.json", again);
    CHECK(again.links[static_cast<std::size_t>(f.link)].bw_fraction ==
          Approx(cal.links[static_cast<std::size_t>(f.link)].bw_fraction).epsilon(1e-3));
  }
}

TEST_CASE("calibration files take NVLS above the line rate, as the defaults have it") {
  // In-switch reduction delivers more bus bandwidth than the links (the default is 1.084).
  Calibration cal;
  apply_calibration_json(R"({"link.nvlink4.nvls_bw_fraction": 1.084})", "c.json", cal);
  CHECK(cal.links[static_cast<std::size_t>(Link::nvlink4)].nvls_bw_fraction == 1.084);
  CHECK_THROWS_WITH(apply_calibration_json(R"({"link.nvlink4.bw_fraction": 1.2})", "c.json", cal),
                    Catch::Contains("expected a number from 1e-06 to 1"));
}

TEST_CASE("nccl-tests: malformed logs are one clear line naming the line") {
  const std::string good = synthetic_all_reduce(8, 1, 25e-6, 360e9);
  auto message = [](const std::string& text) {
    try {
      (void)parse_nccl_tests(text, "log.txt", "all_reduce");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto header = good.find("#       size");
  CHECK(message(good.substr(0, header)) ==
        "log.txt: expected nccl-tests output: no column header ('#  size  count  type ...')");
  const auto last = good.rfind('\n', good.size() - 2);
  CHECK_THAT(message(good.substr(0, last + 20)),
             Catch::StartsWith("log.txt: line ") && Catch::Contains("expected at least 9 columns"));
  std::string bad_time = good;
  bad_time.replace(bad_time.find(" 0.02 "), 6, " fast ");
  CHECK(message(bad_time) ==
        "log.txt: line 16: algbw (GB/s): expected a non-negative number, got 'fast'");
  std::string twice = good;
  twice.replace(twice.find("Rank  1"), 7, "Rank  0");
  CHECK(message(twice) == "log.txt: line 5: rank 0 is listed twice");
}

TEST_CASE("NCCL topology dumps: NVSwitch, peer-to-peer and PCIe servers") {
  const NcclXmlTopology h100 = parse_nccl_topo_xml(data("nccl-xml/dgx-h100.xml"), "h.xml");
  CHECK(h100.matrix.gpus == 8);
  CHECK(h100.sm == 90);
  CHECK(h100.nvswitch);
  CHECK(h100.matrix.nics.size() == 8);
  CHECK(h100.nic_speed_Mbps == 400000);
  CHECK(h100.matrix.min_nvlinks() == 18);  // 5 + 5 + 4 + 4 to the switches: NV18 every pair
  CHECK(gpu_preset_for_sm(h100.sm) == "h100-sxm");
  CHECK(gpu_preset_for_sm(103) == "b300");
  CHECK(gpu_preset_for_sm(75).empty());
  const NcclXmlTopology p2p = parse_nccl_topo_xml(data("nccl-xml/hgx-a100-4gpu-p2p.xml"), "p.xml");
  CHECK(p2p.matrix.gpus == 4);
  CHECK_FALSE(p2p.nvswitch);
  CHECK(p2p.matrix.nvlinks[0][3] == 4);
  CHECK(p2p.matrix.min_nvlinks() == 4);
  const NcclXmlTopology pcie = parse_nccl_topo_xml(data("nccl-xml/pcie-4gpu.xml"), "c.xml");
  CHECK(pcie.matrix.gpus == 4);
  CHECK(pcie.matrix.min_nvlinks() == 0);
  // The server tier the matrix gives: 18 x 25 GB/s, 4 x 25, PCIe.
  SmiClusterOptions opt;
  CHECK(cluster_from_smi(h100.matrix, load_gpu("h100-sxm", "t"), opt).tiers[0].bandwidth ==
        Approx(450e9));
  CHECK(cluster_from_smi(p2p.matrix, load_gpu("a100-80gb", "t"), opt).tiers[0].bandwidth ==
        Approx(100e9));
  CHECK(cluster_from_smi(pcie.matrix, load_gpu("a100-80gb", "t"), opt).tiers[0].link == Link::pcie);
}

TEST_CASE("NCCL topology dumps: malformed ones are one clear line naming the line") {
  auto message = [](const std::string& text) {
    try {
      (void)parse_nccl_topo_xml(text, "t.xml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string gpu = "<pci busid=\"0000:01:00.0\"><gpu dev=\"0\" sm=\"90\" rank=\"0\">";
  CHECK(message("<system>\n" + gpu + "\n</pci></gpu></system>") ==
        "t.xml: line 3: expected </gpu>, got </pci>");
  CHECK(message("<system>\n" + gpu + "</gpu>\n") == "t.xml: line 2: <pci> is never closed");
  CHECK(message("<system>" + gpu + "</gpu></pci>\n" + gpu + "</gpu></pci></system>") ==
        "t.xml: line 2: GPU 0000:01:00.0 is listed twice");
  CHECK(message("<system>" + gpu + "\n<nvlink target=\"x\" count=\"many\" tclass=\"0x068000\"/>") ==
        "t.xml: line 2: <nvlink> count: expected an integer from 1 to 100000, got 'many'");
  CHECK(message("<nvidia-smi/>") == "t.xml: expected an NCCL topology dump: no <system> element");
  CHECK(message("<system></system>") == "t.xml: no <gpu> element in the dump");
  CHECK(message("<system>" + gpu + "<nvlink target=\"0000:99:00.0\" count=\"4\" " +
                "tclass=\"0x030200\"/></gpu></pci></system>") ==
        "t.xml: line 1: <nvlink> target 0000:99:00.0: expected the bus id of a GPU in the dump");
  CHECK(message("<system><gpu dev=\"0\" sm=\"90\"") == "t.xml: line 1: expected the end of <gpu>");
}

TEST_CASE("Slurm host lists: ranges, padding, several brackets, commas") {
  CHECK(expand_hostlist("gpu[001-003]", "h") ==
        std::vector<std::string>{"gpu001", "gpu002", "gpu003"});
  CHECK(expand_hostlist("n[8-10],login", "h") ==
        std::vector<std::string>{"n8", "n9", "n10", "login"});
  CHECK(expand_hostlist("r[1-2]-n[01,03]", "h") ==
        std::vector<std::string>{"r1-n01", "r1-n03", "r2-n01", "r2-n03"});
  CHECK(expand_hostlist("a[1-2],b[5]", "h") == std::vector<std::string>{"a1", "a2", "b5"});
  CHECK_THROWS_WITH(expand_hostlist("gpu[5-1]", "h"),
                    "h: expected ranges like 001-064 inside [...] of 'gpu[5-1]', got '5-1'");
  CHECK_THROWS_WITH(expand_hostlist("gpu[1-4", "h"), "h: expected ']' to close '[' in 'gpu[1-4'");
  CHECK_THROWS_WITH(expand_hostlist("gpu[0-99999999]", "h"),
                    Catch::Contains("names more than 1048576 hosts"));
  // Bracket groups multiply: the count and the characters are checked before a name is built
  // (a fuzzed topology.conf with five groups of long names ran past the fuzzer's 5 s).
  CHECK_THROWS_WITH(expand_hostlist("n[0-99][0-99][0-99][0-9]", "h"),
                    Catch::Contains("names more than 1048576 hosts"));
  CHECK_THROWS_WITH(expand_hostlist(std::string(100, 'x') + "[0-99][0-99][0-99]", "h"),
                    Catch::Contains("expands to more than 64 MiB of host names"));
  CHECK(expand_hostlist("n[0-9][0-9][0-9]", "h").size() == 1000);
  // The characters count over the whole list: two items of 100,000 names of 400-odd characters
  // (40 MB each) are too many together.
  const std::string item = std::string(400, 'x') + "[0-99][0-99][0-9]";
  CHECK_THROWS_WITH(expand_hostlist(item + "a," + item + "b", "h"),
                    Catch::Contains("expands to more than 64 MiB of host names"));
}

TEST_CASE("Slurm topology.conf: switch levels become tiers, hosts follow the switches") {
  const ClusterSpec base = load_cluster("dgx-h100", "t");
  const ClusterSpec two =
      cluster_from_slurm(parse_slurm_topology(data("slurm/topology.conf"), "t.conf"), base, "t");
  CHECK(two.nodes == 32);
  REQUIRE(two.tiers.size() == 3);
  CHECK((two.tiers[1].name == "leaf" && two.tiers[1].fanout == 8));
  CHECK((two.tiers[2].name == "spine" && two.tiers[2].fanout == 4));
  CHECK(two.tiers[1].bandwidth == base.tiers[1].bandwidth);
  // leaf3 (dgx025-032) comes before leaf4 (dgx017-024) as the spine lists them.
  CHECK(two.hosts[16] == "dgx025");
  CHECK(two.hosts[24] == "dgx017");
  const Cluster c(two, "t");
  CHECK(c.gpu_count() == 256);
  CHECK(c.meet_tier(0, 63) == 1);  // dgx001 and dgx008: one leaf
  CHECK(c.meet_tier(0, 64) == 2);  // dgx001 and dgx009: the spine
  const ClusterSpec three =
      cluster_from_slurm(parse_slurm_topology(data("slurm/three-level.conf"), "3.conf"), base, "3");
  REQUIRE(three.tiers.size() == 4);
  CHECK(three.tiers[3].name == "core1");
  CHECK(three.tiers[3].fanout == 2);
  CHECK(three.hosts.front() == "gpu-a1");
  CHECK(three.hosts.back() == "gpu-b8");
  // Written and read back with its hosts.
  const ClusterSpec back = parse_cluster_with_presets(cluster_json(three), "back.json");
  CHECK(back.hosts == three.hosts);
}

TEST_CASE("Slurm topology.conf: a leaf with fewer servers is padded with absent ones") {
  const ClusterSpec base = load_cluster("dgx-h100", "t");
  const ClusterSpec s = cluster_from_slurm(
      parse_slurm_topology("SwitchName=a Nodes=n[1-4]\nSwitchName=b Nodes=n[5-7]\n"
                           "SwitchName=s Switches=a,b",
                           "t.conf"),
      base, "t.conf");
  REQUIRE(s.server_groups.size() == 2);
  CHECK(s.server_groups[0].count == 7);
  CHECK_FALSE(s.server_groups[0].absent);
  CHECK(s.server_groups[1].count == 1);
  CHECK(s.server_groups[1].absent);
  CHECK(s.nodes == 8);
  CHECK(s.tiers[1].fanout == 4);
  CHECK(s.hosts[4] == "n5");
  CHECK(s.hosts[7] == "absent-b-0");
  const Cluster c(s, "t");
  CHECK(c.usable_count() == 7 * 8);
  CHECK(c.meet_tier(4 * 8, 6 * 8) == 1);  // n5 and n7 share leaf b
  CHECK(c.meet_tier(3 * 8, 4 * 8) == 2);  // n4 (leaf a) and n5 (leaf b) meet at the spine
  CHECK_FALSE(c.usable(7 * 8));
}

TEST_CASE("Slurm topology.conf: malformed or irregular trees are one line naming the line") {
  const ClusterSpec base = load_cluster("dgx-h100", "t");
  auto message = [&](const std::string& text) {
    try {
      (void)cluster_from_slurm(parse_slurm_topology(text, "t.conf"), base, "t.conf");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message("SwitchName=a Nodes=n[1-4]\nSwitchName=b Switches=a\nSwitchName=c "
                "Nodes=m[1-4]\nSwitchName=s Switches=b,c") ==
        "t.conf: line 4: switch s: c is not one level below it (topoplan models a tree whose "
        "leaves are all as deep)");
  CHECK(message("SwitchName=a Nodes=n[1-4]\nSwitchName=s Switches=a,b") ==
        "t.conf: line 2: switch s: Switches names b, which is not defined");
  CHECK(message("SwitchName=a Nodes=n[1-4]\nSwitchName=b Nodes=n[4-7]") ==
        "t.conf: line 2: host n4 is under two switches");
  CHECK(message("Nodes=n[1-4]") ==
        "t.conf: line 1: expected SwitchName=... or BlockName=... first on the line");
  CHECK(message("SwitchName=a") ==
        "t.conf: line 1: switch a: expected Nodes=... (a leaf) or Switches=..., one of them");
  CHECK(message("SwitchName=a Nodes=n[1-4]\nSwitchName=a Nodes=m[1-4]") ==
        "t.conf: line 2: switch a is defined twice");
  CHECK(message("# nothing\n") ==
        "t.conf: expected SwitchName=... or BlockName=... lines (topology.conf)");
}

TEST_CASE("Slurm block topology: each block an NVL72 rack, its nodes the rack's trays") {
  // topology/block (Slurm's plugin for NVLink domains): BlockName=... Nodes=...; BlockSizes is
  // a scheduling setting and is read past.
  const ClusterSpec base = load_cluster("gb200-nvl72", "t");
  const std::string conf =
      "# two racks, the second two trays short\n"
      "BlockName=rack1 Nodes=gb[001-018]\nBlockName=rack2 Nodes=gb[019-034]\nBlockSizes=18\n";
  const ClusterSpec s = cluster_from_slurm(parse_slurm_topology(conf, "t.conf"), base, "t.conf");
  CHECK(s.nodes == 2);
  CHECK(s.hosts == std::vector<std::string>{"rack1", "rack2"});
  REQUIRE(s.compute_hosts.size() == 36);
  CHECK(s.compute_hosts[18] == "gb019");
  CHECK(s.compute_hosts[34] == "absent-rack2-0");
  // The missing trays' GPUs are down: plans use the 136 that exist.
  const Cluster c(s, "t");
  CHECK(c.usable_count() == 136);
  CHECK_FALSE(c.usable(72 + 16 * 4));
  CHECK(c.usable(72 + 15 * 4 + 3));
  // What the file says reads back, and the trays name GPUs for --exclude.
  const ClusterSpec back = parse_cluster_json(
      cluster_json(s), "back.json", [](auto&&...) { return load_cluster("gb200-nvl72", "t").gpu; });
  CHECK(back.compute_hosts == s.compute_hosts);
  CHECK(back.down == s.down);
  ClusterSpec more = s;
  add_down_gpus(more, "gb019:1", "--exclude");
  CHECK(std::count(more.down.begin(), more.down.end(), 72 + 1) == 1);
  auto message = [&](const std::string& text, const ClusterSpec& b) {
    try {
      (void)cluster_from_slurm(parse_slurm_topology(text, "t.conf"), b, "t.conf");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Found by fuzz_slurm: a name that is not UTF-8 reached the cluster file's writer (an internal
  // error, exit 3, for the tree format too).
  CHECK(message("BlockName=r Nodes=n\xff[1-2]", base) ==
        "t.conf: line 1: expected printable ASCII, got byte 0xFF");
  std::string many;  // 14,564 racks of 72 GPUs are past the 2^20 GPUs a cluster may hold
  for (int k = 0; k < 14564; ++k) many += fmt::format("BlockName=b{} Nodes=n{}\n", k, k);
  CHECK(message(many, base) == "t.conf: line 14564: more than 1048576 GPUs in the blocks");
  CHECK(message("BlockName=r Nodes=n[1-19]", base) ==
        "t.conf: line 1: block r holds 19 hosts, more than the 18 of a gb200-nvl72 server");
  CHECK(message("BlockName=r Nodes=n[1-2]\nBlockName=r Nodes=n[3-4]", base) ==
        "t.conf: line 2: block r is defined twice");
  CHECK(message("BlockName=r Nodes=n[1-2]\nBlockName=s Nodes=n[2-3]", base) ==
        "t.conf: line 2: host n2 is named twice (blocks and hosts)");
  CHECK(message("BlockName=r Switches=s1", base) ==
        "t.conf: line 1: block r: expected Nodes=... and no Switches=...");
  CHECK(message("BlockName=r Nodes=n[1-2]", load_cluster("dgx-h100", "t")) ==
        "t.conf: BlockName lines name the hosts of NVLink domains: expected a --cluster whose "
        "servers are several hosts (server.gpus_per_host, as gb200-nvl72), got dgx-h100 (8 GPUs "
        "per server, one host each)");
}
