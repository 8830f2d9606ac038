#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "topoplan/error.hpp"
#include "topoplan/fingerprint.hpp"

using namespace topoplan;

namespace {

const char* kSmall = R"({
  "schema": "topoplan.cluster/v1",
  "name": "small",
  "gpu": {"name": "g", "arch": "ampere", "bf16_TFLOPs": 100, "memory_GiB": 16, "hbm_TBps": 1},
  "nodes": 8,
  "server": {"nics": 4, "nic_Gbps": 200},
  "tiers": [
    {"name": "nvlink", "fanout": 4, "bandwidth_GBps": 100, "latency_us": 2},
    {"name": "leaf", "fanout": 2, "bandwidth_GBps": 50, "latency_us": 5},
    {"name": "spine", "link": "roce", "bandwidth_GBps": 40, "latency_us": 9, "oversubscription": 4}
  ]
})";

GpuSpec no_gpu(const std::string& n, const std::string& src, const std::string& path) {
  throw_input(src, path, "no gpu presets in this test: " + n);
}

}  // namespace

TEST_CASE("tiers give domain sizes, meeting tiers and per-GPU bandwidth") {
  Cluster c(parse_cluster_json(kSmall, "small.json", no_gpu), "small.json");
  REQUIRE(c.gpu_count() == 32);
  REQUIRE(c.tier_count() == 3);
  CHECK(c.domain_size(0) == 4);
  CHECK(c.domain_size(1) == 8);
  CHECK(c.domain_size(2) == 32);
  CHECK(c.meet_tier(0, 3) == 0);
  CHECK(c.meet_tier(3, 4) == 1);
  CHECK(c.meet_tier(7, 8) == 2);
  CHECK(c.meet_tier(31, 0) == 2);
  // Tier 0 is NVLink as given: 100 GB/s.
  CHECK(c.bandwidth(0) == Approx(100e9));
  // NIC share: 4 x 200 Gb/s = 100 GB/s over 4 GPUs = 25 GB/s, below the leaf's 50.
  CHECK(c.bandwidth(1) == Approx(25e9));
  // Spine: what reaches it, min(25, 40) GB/s, divided by its 4:1 oversubscription = 6.25 GB/s.
  CHECK(c.bandwidth(2) == Approx(6.25e9));
  CHECK(c.latency_override(2) == Approx(9e-6));
  CHECK(c.link(2) == Link::roce);
  CHECK(c.link(0) == Link::nvlink4);  // the default for tier 0
}

TEST_CASE("unused upper tiers are ignored when the cluster fits below them") {
  ClusterSpec s = parse_cluster_json(kSmall, "small.json", no_gpu);
  s.nodes = 2;
  Cluster c(s, "small.json");
  CHECK(c.tier_count() == 2);
  CHECK(c.meet_tier(0, 7) == 1);
}

TEST_CASE("cluster presets load with their cited figures") {
  Cluster h = test::preset_cluster("dgx-h100", 16);
  CHECK(h.gpu_count() == 128);
  CHECK(h.gpus_per_server() == 8);
  CHECK(h.bandwidth(0) == Approx(450e9));
  CHECK(h.bandwidth(1) == Approx(50e9));  // one NDR 400 Gb/s per GPU
  CHECK(h.gpu().peak_flops == Approx(989e12));
  Cluster a = test::preset_cluster("dgx-a100", 4);
  CHECK(a.bandwidth(0) == Approx(300e9));
  CHECK(a.bandwidth(1) == Approx(25e9));  // HDR 200 Gb/s
  for (auto n : {"hgx-h200", "hgx-h800", "dgx-b200", "dgx-b300"})
    CHECK(test::preset_cluster(n, 2).gpu_count() == 16);
}

TEST_CASE("Blackwell Ultra presets: Blackwell peaks, more memory, 800 Gb/s NICs") {
  const Cluster b = test::preset_cluster("dgx-b300", 2);
  const Cluster b200 = test::preset_cluster("dgx-b200", 2);
  CHECK(b.gpu().peak_flops == Approx(b200.gpu().peak_flops));   // 2,250 dense BF16 TFLOP/s
  CHECK(b.gpu().memory_bytes > 1.4 * b200.gpu().memory_bytes);  // 268.6 GiB against 179
  CHECK(b.bandwidth(0) == Approx(900e9));                       // NVLink5, per direction
  CHECK(b.bandwidth(1) == Approx(100e9));                       // ConnectX-8 XDR 800 Gb/s
  const Cluster g = test::preset_cluster("gb300-nvl72", 2);
  const Cluster g200 = test::preset_cluster("gb200-nvl72", 2);
  CHECK(g.gpus_per_server() == 72);
  CHECK(g.gpu().peak_flops == Approx(g200.gpu().peak_flops));
  CHECK(g.gpu().memory_bytes == Approx(260.8 * 1024 * 1024 * 1024));  // 280 GB
  CHECK(g.bandwidth(1) == Approx(2 * g200.bandwidth(1)));
  // A class of its own for the calibrated efficiencies; the NVLink generation stays Blackwell's.
  CHECK(b.gpu().arch == Arch::blackwell_ultra);
  CHECK(g.gpu().arch == Arch::blackwell_ultra);
  CHECK(b200.gpu().arch == Arch::blackwell);
  CHECK(std::string(to_string(Arch::blackwell_ultra)) == "blackwell-ultra");
}

TEST_CASE("bad cluster input names the file, the JSON path and what was expected") {
  std::string bad = kSmall;
  bad.replace(bad.find("\"bandwidth_GBps\": 50"), 20, "\"bandwidth_GBps\": -3");
  try {
    (void)parse_cluster_json(bad, "cluster.json", no_gpu);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "cluster.json: tiers[1].bandwidth_GBps: expected a positive number, got -3");
  }
  std::string missing = kSmall;
  missing.replace(missing.find("\"bandwidth_GBps\": 40"), 20, "\"bandwidth\": 40");
  CHECK_THROWS_WITH(parse_cluster_json(missing, "c.json", no_gpu),
                    "c.json: tiers[2].bandwidth_GBps: required field is missing");
  std::string link = kSmall;
  link.replace(link.find("\"roce\""), 6, "\"ether\"");
  CHECK_THROWS_WITH(
      parse_cluster_json(link, "c.json", no_gpu),
      "c.json: tiers[2].link: expected nvlink3, nvlink4, nvlink5, pcie, infiniband or "
      "roce, got \"ether\"");
  CHECK_THROWS_WITH(parse_cluster_json("{\"name\": 3}", "c.json", no_gpu),
                    "c.json: name: expected a non-empty string, got 3");
  CHECK_THROWS_WITH(parse_cluster_json("{\"name\": ", "c.json", no_gpu),
                    Catch::StartsWith("c.json: malformed JSON: parse error at line 1"));
  ClusterSpec s = parse_cluster_json(kSmall, "small.json", no_gpu);
  s.nodes = 2;
  s.tiers.resize(1);
  CHECK_THROWS_WITH(Cluster(s, "small.json"),
                    Catch::Contains("servers do not fit in the top tier 'nvlink'"));
}

TEST_CASE("oversubscription compounds: 2:1 at the spine and 2:1 at the core leave a quarter") {
  // Issue 15.5: before, the core tier got min(spine / 2, core / 2), the same as 2:1 at the core
  // alone. Traffic crossing the core has passed the spine's uplinks too.
  ClusterSpec s = test::preset_cluster("dgx-h100", 1).spec();
  s.nodes = 64;
  s.tiers.resize(2);
  s.tiers[1].fanout = 4;  // 4 servers per leaf
  TierSpec spine = s.tiers[1];
  spine.name = "spine";
  TierSpec core = s.tiers[1];
  core.name = "core";
  core.fanout = 0;
  s.tiers.push_back(spine);
  s.tiers.push_back(core);
  const double line = Cluster(s, "t").bandwidth(1);
  ClusterSpec core_only = s;
  core_only.tiers[3].oversubscription = 2;
  ClusterSpec both = core_only;
  both.tiers[2].oversubscription = 2;
  CHECK(Cluster(core_only, "t").bandwidth(2) == Approx(line));
  CHECK(Cluster(core_only, "t").bandwidth(3) == Approx(line / 2));
  CHECK(Cluster(both, "t").bandwidth(2) == Approx(line / 2));
  CHECK(Cluster(both, "t").bandwidth(3) == Approx(line / 4));
  // And DP groups with one member per spine domain (tp 8 x pp 16 = 16 servers = one spine's
  // domain, dp outermost) reduce across the core at half the bandwidth with both ratios.
  Model m = test::preset_model("llama3-70b");
  JobSpec j;
  j.seq_len = 4096;
  j.global_batch = 512;
  const Plan p = test::plan(8, 16, 4, "tp-pp-dp");
  const Evaluation e_core = test::eval(Cluster(core_only, "t"), m, j, p);
  const Evaluation e_both = test::eval(Cluster(both, "t"), m, j, p);
  CHECK(e_core.shapes[Dim::dp].span_tier == 3);
  CHECK(e_both.comm[Dim::dp] > 1.8 * e_core.comm[Dim::dp]);
}

TEST_CASE("a cluster spec written as JSON reads back to the same cluster") {
  for (const auto& name : preset_names("clusters")) {
    ClusterSpec s = load_cluster(name, "test");
    s.tiers.back().oversubscription = 1.5;
    s.tiers.back().latency = 7e-6;
    s.tiers[1].in_network_reduction = true;
    const ClusterSpec back = parse_cluster_json(cluster_json(s), name, no_gpu);
    CHECK(back.tiers[1].in_network_reduction);
    CHECK_FALSE(back.tiers[0].in_network_reduction);
    CHECK(fingerprint(Cluster(back, name)) == fingerprint(Cluster(s, name)));
    CHECK(fingerprint(Cluster(back, name)) != fingerprint(Cluster(load_cluster(name, "t"), name)));
    CHECK(back.tiers.back().link == s.tiers.back().link);
    CHECK(back.gpu.arch == s.gpu.arch);
    CHECK(!is_preset(s));
    CHECK(is_preset(load_cluster(name, "test")));
  }
}

TEST_CASE("compute_hosts name an NVL72 rack's trays: read, written back, and taken by down_gpus") {
  const std::string path = std::string(TOPOPLAN_TEST_DATA) + "/nvl72-trays.json";
  const ClusterSpec s = load_cluster(path, "--cluster");
  REQUIRE(s.compute_hosts.size() == 36);
  CHECK(s.hosts == std::vector<std::string>{"rack-a", "rack-b"});
  // "gb020:3": the 20th tray's fourth GPU, GPU 79 of rack 0 (trays hold 4 GPUs each).
  CHECK(s.down == std::vector<int>{19 * 4 + 3});
  const ClusterSpec back = parse_cluster_json(cluster_json(s), "back.json", no_gpu);
  CHECK(back.compute_hosts == s.compute_hosts);
  CHECK(back.down == s.down);
  // A tray, a server (rack) name and a server index still mean what they meant.
  ClusterSpec more = s;
  add_down_gpus(more, "gb036,rack-a:5,1:0", "--exclude");
  CHECK(more.down == std::vector<int>{5, 72, 79, 140, 141, 142, 143});
  CHECK_THROWS_WITH(add_down_gpus(more, "gb036:4", "--exclude"),
                    Catch::Contains("expected a GPU index below 4 after 'gb036:', got 'gb036:4'"));
  // Reports and the written file name them by tray, as they were given, grouped per tray.
  CHECK(device_name(s, 79) == "gb020:3");
  CHECK(device_name(more, 5) == "gb002:1");
  CHECK(devices_string(more, more.down) == "gb002:1 gb019:0 gb020:3 gb036:0-3");
  CHECK(devices_string(more, more.down, 2) == "gb002:1 gb019:0 and 2 more hosts");
  CHECK(nlohmann::json::parse(cluster_json(s))["down_gpus"] == nlohmann::json::array({"gb020:3"}));
  // Without tray names: SERVER:GPU, grouped per server.
  ClusterSpec plain = more;
  plain.compute_hosts.clear();
  CHECK(device_name(plain, 79) == "rack-b:7");
  CHECK(devices_string(plain, plain.down) == "rack-a:5 rack-b:0,7,68-71");
}

TEST_CASE("compute_hosts: only on split servers, one per host, none a server's name") {
  const std::string path = std::string(TOPOPLAN_TEST_DATA) + "/nvl72-trays.json";
  const ClusterSpec s = load_cluster(path, "--cluster");
  auto doc = nlohmann::json::parse(cluster_json(s));
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json d = doc;
    edit(d);
    return d.dump();
  };
  CHECK_THROWS_WITH(
      parse_cluster_json(with([](auto& d) { d["server"].erase("gpus_per_host"); }), "c.json",
                         no_gpu),
      "c.json: compute_hosts: expected only where server.gpus_per_host divides a server's 72 GPUs "
      "into several hosts");
  CHECK_THROWS_WITH(
      parse_cluster_json(with([](auto& d) { d["compute_hosts"].erase(35); }), "c.json", no_gpu),
      "c.json: compute_hosts: expected a host per 4 GPUs (36), got 35");
  CHECK_THROWS_WITH(
      parse_cluster_json(with([](auto& d) { d["compute_hosts"][3] = "rack-b"; }), "c.json", no_gpu),
      "c.json: compute_hosts[3]: expected each host once, got 'rack-b' again");
}
