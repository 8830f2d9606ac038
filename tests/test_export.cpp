#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "helpers.hpp"
#include "topoplan/export.hpp"
#include "topoplan/import/megatron_args.hpp"
#include "topoplan/import/plan_json.hpp"

using namespace topoplan;

namespace {

using Groups = std::vector<std::vector<int>>;

/// Megatron-LM's RankGenerator, written out independently from reference/formats.md: the order
/// string's leftmost token has stride 1; a dimension's groups vary its coordinate with the others
/// fixed. `sizes` and `order` name the tokens; returns the groups of `dim` sorted by first rank.
Groups megatron_groups(const std::vector<std::pair<std::string, int>>& order,
                       const std::string& dim) {
  int world = 1;
  for (auto& [n, s] : order) world *= s;
  Groups out;
  std::vector<int> coord(order.size());
  std::map<std::vector<int>, std::vector<int>> by_rest;
  for (int r = 0; r < world; ++r) {
    int rem = r;
    std::vector<int> rest;
    for (auto& [n, s] : order) {
      if (n != dim) rest.push_back(rem % s);
      rem /= s;
    }
    by_rest[rest].push_back(r);
  }
  for (auto& [k, g] : by_rest) out.push_back(g);
  std::sort(out.begin(), out.end());
  return out;
}

Plan make(int tp, int cp, int ep, int dp, int pp, Order order = kDefaultOrder) {
  Plan p;
  p.degree = DimArray<int>{{tp, cp, ep, dp, pp}};  // Dim order
  p.order = order;
  return p;
}

/// The Megatron-LM arguments export writes for this job and plan (the placement as ordered), and
/// what --megatron-args reads back from the export's last line, the arguments.
std::string megatron_args_for(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p) {
  RunContext run{c, m, j, Calibration{}};
  Mapping map = Mapping::from_order(p);
  RankTable t = build_rank_table(c, map, {});
  return export_megatron_args(ExportContext{run, p, map, t, ExportOptions{}});
}

ImportedPlan read_back(const std::string& text) {
  return parse_megatron_args(text.substr(text.rfind('\n', text.size() - 2) + 1), "args");
}

/// The arguments for Llama 3 8B on 4 x 8 B200 (TP 8, DP 4, distributed optimizer) in `d`,
/// parameters gathered in the low-precision format.
std::string low_precision_args(Dtype d) {
  JobSpec j;
  j.dtype = d;
  j.fp8_param_gather = d != Dtype::nvfp4;
  j.fp4_param_gather = d == Dtype::nvfp4;
  Plan p = make(8, 1, 1, 4, 1);
  p.zero = 1;
  return megatron_args_for(test::preset_cluster("dgx-b200", 4), test::preset_model("llama3-8b"), j,
                           p);
}

}  // namespace

TEST_CASE("exported groups equal Megatron-LM's, dense and expert, for both orders") {
  struct Case {
    int tp, cp, ep, dp, pp;
    int etp = 0;  // --expert-tensor-parallel-size (0: tp)
  };
  // The last three fold EP over the TP ranks (expert TP below tp).
  for (Case k : {Case{2, 1, 1, 4, 2}, Case{2, 2, 1, 2, 2}, Case{4, 2, 2, 4, 2}, Case{2, 1, 4, 8, 2},
                 Case{8, 2, 4, 2, 4}, Case{1, 4, 2, 2, 1}, Case{2, 1, 4, 4, 2, 1},
                 Case{4, 2, 8, 2, 2, 1}, Case{8, 1, 16, 4, 2, 2}}) {
    for (bool tp_pp_dp : {false, true}) {
      Plan p = make(k.tp, k.cp, k.ep, k.dp, k.pp, tp_pp_dp ? kTpPpDpOrder : kDefaultOrder);
      p.expert_tp = k.etp;
      const int etp = k.etp > 0 ? k.etp : k.tp;
      Mapping m = Mapping::from_order(p);
      INFO("tp " << k.tp << " cp " << k.cp << " ep " << k.ep << " dp " << k.dp << " pp " << k.pp
                 << " expert tp " << etp << (tp_pp_dp ? " --use-tp-pp-dp-mapping" : " default"));
      // Dense generator: tp-cp-dp-pp or tp-cp-pp-dp (ep = 1).
      std::vector<std::pair<std::string, int>> dense =
          tp_pp_dp ? std::vector<std::pair<std::string, int>>{{"tp", k.tp},
                                                              {"cp", k.cp},
                                                              {"pp", k.pp},
                                                              {"dp", k.dp}}
                   : std::vector<std::pair<std::string, int>>{
                         {"tp", k.tp}, {"cp", k.cp}, {"dp", k.dp}, {"pp", k.pp}};
      for (Dim d : {Dim::tp, Dim::cp, Dim::dp, Dim::pp}) {
        Groups g = m.groups(d);
        std::sort(g.begin(), g.end());
        CHECK(g == megatron_groups(dense, to_string(d)));
      }
      // Expert generator: tp = expert TP, ep, dp = world / (expert-tp ep pp), cp = 1.
      const int edp = k.tp * k.cp * k.dp / (etp * k.ep);
      std::vector<std::pair<std::string, int>> expert =
          tp_pp_dp ? std::vector<std::pair<std::string, int>>{{"tp", etp},
                                                              {"ep", k.ep},
                                                              {"pp", k.pp},
                                                              {"dp", edp}}
                   : std::vector<std::pair<std::string, int>>{
                         {"tp", etp}, {"ep", k.ep}, {"dp", edp}, {"pp", k.pp}};
      Groups ep = m.groups(Dim::ep);
      std::sort(ep.begin(), ep.end());
      CHECK(ep == megatron_groups(expert, "ep"));
      Groups edp_groups = m.expert_dp_groups();
      std::sort(edp_groups.begin(), edp_groups.end());
      CHECK(edp_groups == megatron_groups(expert, "dp"));
      // Megatron requires both generators to give the same PP groups: always so with pp last
      // (the default order); with --use-tp-pp-dp-mapping only when cp = ep.
      Groups pp_expert = megatron_groups(expert, "pp");
      Groups pp_dense = m.groups(Dim::pp);
      std::sort(pp_dense.begin(), pp_dense.end());
      if (etp == k.tp) CHECK((pp_expert == pp_dense) == (!tp_pp_dp || k.cp == k.ep || k.pp == 1));
      CHECK(expert_pp_mismatch(p) == (pp_expert != pp_dense));
    }
  }
}

TEST_CASE("the rank table and the launcher formats follow their documented syntax") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  Plan p = make(8, 1, 1, 2, 2);
  Mapping map = Mapping::from_order(p);
  RankTable t = build_rank_table(c, map, {});
  RunContext run{c, m, j, Calibration{}};
  ExportOptions opt;
  opt.cluster_arg = "dgx-h100";
  opt.model_arg = "llama3-8b";
  ExportContext x{run, p, map, t, opt};
  REQUIRE(t.ranks.size() == 32);
  CHECK(t.node_contiguous);
  CHECK_FALSE(t.gpus_permuted);
  CHECK(t.ranks[13].node == 1);
  CHECK(t.ranks[13].local_rank == 5);
  CHECK(t.ranks[13].gpu == 5);

  // DeepSpeed hostfile: `hostname slots=N` lines, '#' comments, no duplicate hosts.
  std::istringstream ds(export_deepspeed_hostfile(x));
  std::regex ds_line(R"(^(\S+)\s+slots=(\d+)$)");
  std::set<std::string> seen;
  int hosts = 0;
  for (std::string line; std::getline(ds, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::smatch mm;
    REQUIRE(std::regex_match(line, mm, ds_line));
    CHECK(mm[2] == "8");
    CHECK(seen.insert(mm[1]).second);
    ++hosts;
  }
  CHECK(hosts == 4);

  // Open MPI rankfile: `rank N=host slot=<cpus>`, one per rank, in rank order.
  std::istringstream rf(export_openmpi_rankfile(x));
  std::regex rf_line(R"(^rank (\d+)=(\S+) slot=(\d+)(-\d+)?$)");
  int n = 0;
  for (std::string line; std::getline(rf, line); ++n) {
    std::smatch mm;
    REQUIRE(std::regex_match(line, mm, rf_line));
    CHECK(std::stoi(mm[1]) == n);
    CHECK(mm[2] == fmt::format("node{:03d}", n / 8));
  }
  CHECK(n == 32);

  // SLURM_HOSTFILE: one host per task, in rank order.
  std::istringstream sl(export_slurm_hostfile(x));
  n = 0;
  for (std::string line; std::getline(sl, line); ++n)
    CHECK(line == fmt::format("node{:03d}", n / 8));
  CHECK(n == 32);

  // torchrun: one static-rendezvous command per node.
  std::string tr = export_torchrun(x);
  CHECK_THAT(tr,
             Catch::Contains("--nnodes=4 --nproc-per-node=8 --node-rank=3 --rdzv-backend=static "
                             "--rdzv-endpoint=node000:29500 train.py"));
  CHECK_THAT(tr, !Catch::Contains("CUDA_VISIBLE_DEVICES"));

  // DeviceMesh: the reversed order string.
  CHECK_THAT(export_devicemesh(x),
             Catch::Contains(
                 "init_device_mesh(\"cuda\", (2, 2, 8), mesh_dim_names=(\"pp\", \"dp\", \"tp\"))"));
}

TEST_CASE("Megatron-LM arguments pasted from a script: quotes and line continuations") {
  const std::string script =
      "--tensor-model-parallel-size 4 \\\n  --pipeline-model-parallel-size=2 \\\n"
      "  --data-path '/data/my corpus' --tokenizer-type \"GPT2BPETokenizer\" --micro-batch-size 2";
  ImportedPlan p = parse_megatron_args(script, "args");
  CHECK(p.plan[Dim::tp] == 4);
  CHECK(p.plan[Dim::pp] == 2);
  CHECK(p.plan.micro_batch == 2);
  CHECK_THROWS_WITH(parse_megatron_args("--data-path 'a b", "args"),
                    "args: expected a closing ' quote");
}

TEST_CASE("a flexible pipeline layout exports as Megatron-core's layout string and reads back") {
  Cluster c = test::preset_cluster("dgx-h100", 1024);
  Model m = test::preset_model("llama3.1-405b");
  JobSpec j;
  j.seq_len = 8192;
  j.global_batch = 2048;
  RunContext run{c, m, j, Calibration{}};
  Plan p = make(8, 1, 1, 64, 16, kDefaultOrder);
  p.vpp = 3;
  p.flexible_layout = true;  // 7, 8 x 14, 7 layers: no stage a multiple of 3
  Mapping map = Mapping::from_order(p);
  RankTable t = build_rank_table(c, map, {});
  // Exported at p.vpp, read back: the layout's virtual stages, and the plan's vpp and split.
  auto round_trip = [&](std::size_t virtual_stages) {
    const std::string text = export_megatron_args(ExportContext{run, p, map, t, ExportOptions{}});
    ImportedPlan back =
        parse_megatron_args(text.substr(text.rfind('\n', text.size() - 2) + 1), "args");
    CHECK(back.layout.size() == virtual_stages);
    Plan q = back.plan;
    apply_layer_choices(back, 126, q);
    CHECK(q.vpp == p.vpp);
    CHECK(q.flexible_layout);
    const auto split = plan_split(q, 126);
    REQUIRE(split);
    CHECK((split->first == 7 && split->middle == 8 && split->last == 7));
    return text;
  };
  // 48 virtual stages, rank 0's first chunk with the embedding, rank 15's last with the loss.
  const std::string text = round_trip(48);
  CHECK_THAT(text, Catch::Contains("--pipeline-model-parallel-layout \"Ettt|ttt|"));
  CHECK_THAT(text, Catch::Contains("|tt|ttL\""));
  CHECK_THAT(text, !Catch::Contains("--num-virtual-stages-per-pipeline-rank"));
  // vpp 8 (Megatron-Bridge's Llama 3.1 405B on GB200: pp 16, vpp 8): 126 layers in 128 chunks,
  // the first stage's first chunk the embedding's alone, the last stage's last the loss's.
  p.vpp = 8;
  const std::string eight = round_trip(128);
  CHECK_THAT(eight, Catch::Contains("--pipeline-model-parallel-layout \"E|t|t|"));
  CHECK_THAT(eight, Catch::Contains("|t|L\""));
  CHECK_THROWS_WITH(parse_megatron_args("--pipeline-model-parallel-layout 'Et*3|(tt|)*x'", "a"),
                    Catch::Contains("expected a repeat count after '*'"));
  ImportedPlan repeat = parse_megatron_args(
      "--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout 'Et*3|(tt|)*6,t|L'", "a");
  CHECK(repeat.layout == std::vector<std::int64_t>{3, 2, 2, 2, 2, 2, 2, 1, 0});
}

TEST_CASE("Megatron-LM arguments round-trip, and non-Megatron orders are called out") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  RunContext run{c, m, j, Calibration{}};
  ExportOptions opt;
  for (Order o : {kDefaultOrder, kTpPpDpOrder}) {
    Plan p = make(4, 1, 1, 4, 2, o);
    p.micro_batch = 2;
    p.sequence_parallel = true;
    p.recompute = Recompute::selective;
    Mapping map = Mapping::from_order(p);
    RankTable t = build_rank_table(c, map, {});
    std::string text = export_megatron_args(ExportContext{run, p, map, t, opt});
    CHECK_THAT(text, !Catch::Contains("not expressible"));
    ImportedPlan back =
        parse_megatron_args(text.substr(text.rfind('\n', text.size() - 2) + 1), "args");
    CHECK(back.plan[Dim::tp] == 4);
    CHECK(back.plan[Dim::pp] == 2);
    CHECK(back.plan.micro_batch == 2);
    CHECK(back.plan.zero == 1);
    CHECK(back.plan.sequence_parallel);
    CHECK(back.plan.recompute == Recompute::selective);
    CHECK(same_layout(p, back.plan.order));
    CHECK(*back.global_batch == 512);
  }
  Plan odd = make(4, 1, 1, 4, 2, parse_order("dp-tp-pp", "--order"));
  Mapping map = Mapping::from_order(odd);
  RankTable t = build_rank_table(c, map, {});
  CHECK_THAT(export_megatron_args(ExportContext{run, odd, map, t, opt}),
             Catch::Contains("order dp-tp-pp is not expressible with Megatron-LM's flags"));
}

TEST_CASE(
    "a permuted placement needs CUDA_VISIBLE_DEVICES, and a scattered one is refused by torchrun") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  RunContext run{c, m, j, Calibration{}};
  ExportOptions opt;
  Plan p = make(8, 1, 1, 2, 1);
  // Reverse the GPUs inside each node: rank r on GPU 7 - r % 8.
  std::vector<int> dev(16);
  for (int r = 0; r < 16; ++r) dev[r] = (r / 8) * 8 + 7 - r % 8;
  Mapping rev = Mapping::with_devices(p, dev);
  RankTable t = build_rank_table(c, rev, {"a", "b"});
  CHECK(t.gpus_permuted);
  CHECK_THAT(export_torchrun(ExportContext{run, p, rev, t, opt}),
             Catch::Contains("CUDA_VISIBLE_DEVICES=7,6,5,4,3,2,1,0"));
  // Interleave ranks across the two nodes: not expressible by torchrun or DeepSpeed.
  for (int r = 0; r < 16; ++r) dev[r] = (r % 2) * 8 + r / 2;
  Mapping inter = Mapping::with_devices(p, dev);
  RankTable t2 = build_rank_table(c, inter, {});
  CHECK_FALSE(t2.node_contiguous);
  CHECK_THROWS_WITH(export_torchrun(ExportContext{run, p, inter, t2, opt}),
                    Catch::Contains("which torchrun cannot express"));
  CHECK(export_slurm_hostfile(ExportContext{run, p, inter, t2, opt}).substr(0, 16) ==
        "node000\nnode001\n");
}

TEST_CASE("the rank file carries the plan, the placement and the input fingerprints") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  RunContext run{c, m, j, Calibration{}};
  ExportOptions opt;
  opt.cluster_arg = "dgx-h100";
  opt.model_arg = "llama3-8b";
  Plan p = make(4, 1, 1, 2, 2);
  Mapping map = Mapping::from_order(p);
  RankTable t = build_rank_table(c, map, {});
  std::string text = export_ranks_json(ExportContext{run, p, map, t, opt});
  auto doc = nlohmann::json::parse(text);
  CHECK(doc["schema"] == "topoplan.ranks/v1");
  CHECK(doc["world_size"] == 16);
  CHECK(doc["ranks"][9]["host"] == "node001");
  CHECK(doc["groups"]["tp"][1] == std::vector<int>{4, 5, 6, 7});
  ImportedPlan back = parse_ranks_json(text, "ranks.json");
  CHECK(back.plan.degree == p.degree);
  CHECK(back.node_of_rank[9] == 1);
  CHECK(back.gpu_of_rank[9] == 1);
  CHECK(*back.cluster == "dgx-h100");
  CHECK(back.cluster_fingerprint->rfind("fnv1a64:", 0) == 0);
  // The multi-token-prediction count trained travels with the job (session 30).
  CHECK(!back.mtp_layers);  // a JobSpec no input resolved writes -1: the model's own
  j.mtp_layers = 0;
  const std::string none = export_ranks_json(ExportContext{run, p, map, t, opt});
  CHECK(parse_ranks_json(none, "ranks.json").mtp_layers == 0);
}

TEST_CASE("an NVL72 rack's trays are the hosts the launcher files start processes on") {
  // A server is the rack's 72-GPU NVLink domain; each compute tray of 4 GPUs is its own host.
  Cluster c = test::preset_cluster("gb200-nvl72", 2);
  REQUIRE(c.gpus_per_host() == 4);
  CHECK(host_count(c) == 36);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  RunContext run{c, m, j, Calibration{}};
  ExportOptions opt;
  Plan p = make(4, 1, 1, 36, 1);  // tp 4, dp 36: 144 ranks over two racks
  Mapping map = Mapping::from_order(p);
  RankTable t = build_rank_table(c, map, {});
  ExportContext x{run, p, map, t, opt};
  REQUIRE(t.ranks.size() == 144);
  CHECK(t.gpus_per_node == 4);
  CHECK(t.hosts.size() == 36);
  CHECK(t.node_contiguous);
  CHECK_FALSE(t.gpus_permuted);
  const RankEntry& e = t.ranks[77];  // rack 1, GPU 5: its second tray, CUDA device 1
  CHECK(e.node == 1);
  CHECK(e.gpu == 5);
  CHECK(e.host == 19);
  CHECK(e.host_gpu == 1);
  CHECK(e.local_rank == 1);
  const std::string torchrun = export_torchrun(x);
  CHECK(torchrun.find("--nnodes=36 --nproc-per-node=4 --node-rank=19") != std::string::npos);
  CHECK(torchrun.find("--nproc-per-node=72") == std::string::npos);
  std::istringstream slurm(export_slurm_hostfile(x));
  std::vector<std::string> lines;
  for (std::string line; std::getline(slurm, line);) lines.push_back(line);
  REQUIRE(lines.size() == 144);
  CHECK(lines[77] == "node019");
  CHECK(lines[80] == "node020");
  auto doc = nlohmann::json::parse(export_ranks_json(x));
  CHECK(doc["ranks"][77]["node"] == 1);  // the rank table keeps server and GPU (--ranks reads it)
  CHECK(doc["ranks"][77]["gpu"] == 5);
  CHECK(doc["ranks"][77]["host"] == "node019");
  CHECK(doc["ranks"][77]["host_gpu"] == 1);
  // A host count that does not divide the server is refused where the cluster is built.
  ClusterSpec bad = load_cluster("gb200-nvl72", "test");
  bad.gpus_per_host = 5;
  CHECK_THROWS_WITH(Cluster(bad, "c.json"),
                    "c.json: server.gpus_per_host: expected a divisor of the 72 GPUs per server, "
                    "got 5");
}

TEST_CASE("host lists: comments, blanks, duplicates and too few names") {
  CHECK(parse_hosts("# rack 1\na\n\n b  # first\nc\n", "hosts", 2) ==
        std::vector<std::string>{"a", "b"});
  CHECK_THROWS_WITH(parse_hosts("a\na\n", "hosts", 2), "hosts: line 2: host 'a' appears twice");
  CHECK_THROWS_WITH(parse_hosts("a\n", "hosts", 2),
                    "hosts: expected 2 hostnames (one per server), got 1");
  // Bytes a JSON file or a launcher script cannot carry (ranks.json had ended in an internal
  // error, exit 3).
  CHECK_THROWS_WITH(parse_hosts("a\nb\xff\n", "hosts", 2),
                    "hosts: line 2: expected printable ASCII, got byte 0xFF");
}

TEST_CASE("launch advice names only the launchers that can start the placement") {
  // Issue 15.8: Megatron/DeviceMesh said "launch with torchrun.sh" for placements torchrun
  // refuses, and a within-node permutation was pointed to slurm-hostfile, which cannot express it.
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  RunContext run{c, m, j, Calibration{}};
  ExportOptions opt;
  Plan p = make(8, 1, 1, 2, 1);
  std::vector<int> dev(16);
  for (int r = 0; r < 16; ++r) dev[r] = (r / 8) * 8 + 7 - r % 8;  // reversed inside each node
  Mapping rev = Mapping::with_devices(p, dev);
  RankTable t = build_rank_table(c, rev, {});
  ExportContext x{run, p, rev, t, opt};
  CHECK(launchers_for(t) == "--format torchrun");
  CHECK_THAT(export_megatron_args(x),
             Catch::Contains("launch with topoplan export --format torchrun so"));
  CHECK_THAT(export_devicemesh(x),
             Catch::Contains("launch with topoplan export --format torchrun so"));
  CHECK_THROWS_WITH(
      export_slurm_hostfile(x),
      "--format slurm: this placement permutes GPUs inside a node (its tasks take GPUs "
      "in local-rank order), which slurm cannot express; use --format torchrun");
  CHECK_THROWS_WITH(export_openmpi_rankfile(x), Catch::Contains("use --format torchrun"));
  CHECK_THROWS_WITH(export_deepspeed_hostfile(x), Catch::Contains("use --format torchrun"));
  // Ranks alternating between the nodes, GPUs in local order: Slurm and Open MPI, not torchrun.
  for (int r = 0; r < 16; ++r) dev[r] = (r % 2) * 8 + r / 2;
  Mapping inter = Mapping::with_devices(p, dev);
  RankTable t2 = build_rank_table(c, inter, {});
  ExportContext x2{run, p, inter, t2, opt};
  CHECK(launchers_for(t2) == "--format slurm or --format openmpi");
  CHECK_THAT(export_megatron_args(x2),
             Catch::Contains("launch with topoplan export --format slurm or --format openmpi"));
  CHECK_THROWS_WITH(export_torchrun(x2),
                    Catch::Contains("puts non-consecutive ranks on one node, "
                                    "which torchrun cannot express; use --format slurm"));
  // Both at once: nothing here starts it.
  for (int r = 0; r < 16; ++r) dev[r] = (r % 2) * 8 + 7 - r / 2;
  Mapping both = Mapping::with_devices(p, dev);
  RankTable t3 = build_rank_table(c, both, {});
  CHECK(launchers_for(t3).empty());
  CHECK_THAT(export_megatron_args(ExportContext{run, p, both, t3, opt}),
             Catch::Contains("no launcher format here can put them as is"));
}

TEST_CASE("Megatron-LM: --fp8-param-gather and --ddp-bucket-size are written and read back") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  j.dtype = Dtype::fp8;
  j.fp8_param_gather = true;
  j.dp_bucket_params = 104857600;
  const Plan p = make(8, 1, 1, 4, 1);
  const std::string text = megatron_args_for(c, m, j, p);
  CHECK_THAT(text, Catch::Contains("--fp8-param-gather --ddp-bucket-size 104857600"));
  const ImportedPlan back = read_back(text);
  REQUIRE(back.fp8_param_gather);
  CHECK(*back.fp8_param_gather);
  REQUIRE(back.dp_bucket_params);
  CHECK(*back.dp_bucket_params == 104857600);
  // Training scripts give buckets past 2^31 parameters (--ddp-bucket-size 4000000000).
  const ImportedPlan large = parse_megatron_args("--ddp-bucket-size 4000000000", "args");
  REQUIRE(large.dp_bucket_params);
  CHECK(*large.dp_bucket_params == 4000000000);
  // FP8 attention is Megatron-core's --fp8-dot-product-attention, both ways.
  j.fp8_attention = true;
  const std::string attn = megatron_args_for(c, m, j, p);
  CHECK_THAT(attn, Catch::Contains(" --fp8-dot-product-attention"));
  const ImportedPlan attn_back = read_back(attn);
  REQUIRE(attn_back.fp8_attention);
  CHECK(*attn_back.fp8_attention);
  REQUIRE(back.fp8_attention);
  CHECK_FALSE(*back.fp8_attention);  // Megatron-LM's default: off
  j.fp8_attention = false;
  // bf16 training has no FP8 parameters to gather; the default bucket size is not written.
  j.dtype = Dtype::bf16;
  j.dp_bucket_params = 0;
  const std::string bf16 = megatron_args_for(c, m, j, p);
  CHECK_THAT(bf16, !Catch::Contains("--fp8-param-gather"));
  CHECK_THAT(bf16, !Catch::Contains("--ddp-bucket-size"));
}

TEST_CASE(
    "Megatron-LM: nvfp4 training is written as --fp4-format (and its gathers) and read back") {
  const std::string text = low_precision_args(Dtype::nvfp4);
  CHECK_THAT(text, Catch::Contains("--bf16 --fp4-format e2m1 --fp4-recipe nvfp4"));
  CHECK_THAT(text, Catch::Contains("--fp4-param-gather"));
  CHECK_THAT(text, !Catch::Contains("--fp8-format"));
  const ImportedPlan back = read_back(text);
  REQUIRE(back.dtype);
  CHECK(*back.dtype == Dtype::nvfp4);
  REQUIRE(back.fp4_param_gather);
  CHECK(*back.fp4_param_gather);
  // --bf16 before --fp4-format, as training scripts pass them: still NVFP4.
  const ImportedPlan order = parse_megatron_args("--bf16 --fp4-format e2m1", "args");
  REQUIRE(order.dtype);
  CHECK(*order.dtype == Dtype::nvfp4);
}

TEST_CASE("Megatron-LM: mxfp8 training is written as --fp8-recipe mxfp8 and read back") {
  const std::string text = low_precision_args(Dtype::mxfp8);
  CHECK_THAT(text, Catch::Contains("--bf16 --fp8-format e4m3 --fp8-recipe mxfp8"));
  CHECK_THAT(text, Catch::Contains("--fp8-param-gather"));
  const ImportedPlan back = read_back(text);
  REQUIRE(back.dtype);
  CHECK(*back.dtype == Dtype::mxfp8);
  // The recipe before the format, as scripts may pass them: still MXFP8; another recipe is FP8;
  // the recipe without --fp8-format trains in bf16, as Megatron-LM does.
  CHECK(*parse_megatron_args("--fp8-recipe mxfp8 --fp8-format e4m3", "args").dtype == Dtype::mxfp8);
  CHECK(*parse_megatron_args("--fp8-format e4m3 --fp8-recipe tensorwise", "args").dtype ==
        Dtype::fp8);
  CHECK(*parse_megatron_args("--bf16 --fp8-recipe mxfp8", "args").dtype == Dtype::bf16);
}

TEST_CASE("Megatron-LM: --grad-reduce-in-bf16 is written for bf16 gradients and read back") {
  Cluster c = test::preset_cluster("dgx-h100", 4);
  Model m = test::preset_model("llama3-8b");
  JobSpec j;
  j.grad_reduce_bf16 = true;
  RunContext run{c, m, j, Calibration{}};
  Plan p = make(8, 1, 1, 4, 1, kDefaultOrder);
  Mapping map = Mapping::from_order(p);
  RankTable t = build_rank_table(c, map, {});
  const std::string text = export_megatron_args(ExportContext{run, p, map, t, ExportOptions{}});
  CHECK_THAT(text, Catch::Contains("--grad-reduce-in-bf16"));
  const ImportedPlan back =
      parse_megatron_args(text.substr(text.rfind('\n', text.size() - 2) + 1), "args");
  REQUIRE(back.grad_reduce_bf16);
  CHECK(*back.grad_reduce_bf16);
  j.grad_reduce_bf16 = false;
  RunContext plain{c, m, j, Calibration{}};
  CHECK_THAT(export_megatron_args(ExportContext{plain, p, map, t, ExportOptions{}}),
             !Catch::Contains("--grad-reduce-in-bf16"));
}

namespace {

/// The Megatron-LM arguments exported for plan `p` of Llama 3 8B on 4 x dgx-h100 under job `j`.
std::string llama8b_megatron_args(const JobSpec& j, const Plan& p) {
  return megatron_args_for(test::preset_cluster("dgx-h100", 4), test::preset_model("llama3-8b"), j,
                           p);
}

}  // namespace

TEST_CASE("Megatron-LM: activation offloading is written as --cpu-offloading and read back") {
  Plan p = make(1, 1, 1, 32, 1, kDefaultOrder);
  p.offload_layers = 12;
  const std::string text = llama8b_megatron_args(JobSpec{}, p);
  CHECK_THAT(text, Catch::Contains("--cpu-offloading --cpu-offloading-num-layers 12"));
  const ImportedPlan back = read_back(text);
  Plan q = back.plan;
  apply_layer_choices(back, 32, q);
  CHECK(q.offload_layers == 12);
  // The layer count alone does not offload: Megatron-core needs --cpu-offloading too.
  const ImportedPlan count_only =
      parse_megatron_args("--tensor-model-parallel-size 1 --cpu-offloading-num-layers 12", "args");
  Plan r = count_only.plan;
  apply_layer_choices(count_only, 32, r);
  CHECK(r.offload_layers == 0);
}

TEST_CASE(
    "Megatron-LM: expert TP below tp is written as --expert-tensor-parallel-size and read back") {
  Cluster c = test::preset_cluster("dgx-h100", 2);
  Model m = test::preset_model("mixtral-8x7b");
  RunContext run{c, m, JobSpec{}, Calibration{}};
  Plan p = make(2, 1, 8, 8, 1, kDefaultOrder);
  p.expert_tp = 1;
  Mapping map = Mapping::from_order(p);
  RankTable t = build_rank_table(c, map, {});
  const std::string text = export_megatron_args(ExportContext{run, p, map, t, ExportOptions{}});
  CHECK_THAT(text, Catch::Contains("--expert-model-parallel-size 8"));
  CHECK_THAT(text, Catch::Contains("--expert-tensor-parallel-size 1"));
  CHECK(read_back(text).plan.expert_tp == 1);
  // At the default (expert TP = tp) the flag is left out.
  p = make(2, 1, 4, 8, 1, kDefaultOrder);
  map = Mapping::from_order(p);
  t = build_rank_table(c, map, {});
  CHECK_THAT(export_megatron_args(ExportContext{run, p, map, t, ExportOptions{}}),
             !Catch::Contains("--expert-tensor-parallel-size"));
}

TEST_CASE(
    "Megatron-LM: --overlap-param-gather is written with the distributed optimizer and read back") {
  JobSpec j;
  j.overlap_param_gather = true;
  Plan p = make(8, 1, 1, 4, 1, kDefaultOrder);
  p.zero = 1;
  const std::string text = llama8b_megatron_args(j, p);
  CHECK_THAT(text, Catch::Contains("--use-distributed-optimizer"));
  CHECK_THAT(text, Catch::Contains("--overlap-param-gather"));
  const ImportedPlan back = read_back(text);
  REQUIRE(back.overlap_param_gather);
  CHECK(*back.overlap_param_gather);
  // Without the distributed optimizer there is no parameter gather to overlap.
  p.zero = 0;
  CHECK_THAT(llama8b_megatron_args(j, p), !Catch::Contains("--overlap-param-gather"));
}

TEST_CASE("Megatron-LM: CUDA graphs are written as --cuda-graph-impl and read back") {
  JobSpec j;
  j.cuda_graphs = true;
  Plan p = make(1, 1, 8, 4, 1);
  p.zero = 1;
  // An MoE model graphs attention and its router and dispatch preprocessing.
  const std::string moe = megatron_args_for(test::preset_cluster("dgx-h100", 4),
                                            test::preset_model("mixtral-8x7b"), j, p);
  CHECK_THAT(moe, Catch::Contains(
                      "--cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router "
                      "moe_preprocess"));
  const ImportedPlan back = read_back(moe);
  REQUIRE(back.cuda_graphs);
  CHECK(*back.cuda_graphs);
  // A dense model graphs attention; eager training writes nothing and reads back eager.
  const std::string dense = llama8b_megatron_args(j, make(8, 1, 1, 4, 1));
  CHECK_THAT(dense, Catch::EndsWith("--cuda-graph-scope attn\n") ||
                        Catch::Contains("--cuda-graph-scope attn "));
  CHECK_THAT(dense, !Catch::Contains("moe_router"));
  j.cuda_graphs = false;
  const std::string eager = llama8b_megatron_args(j, make(8, 1, 1, 4, 1));
  CHECK_THAT(eager, !Catch::Contains("cuda-graph"));
  REQUIRE(read_back(eager).cuda_graphs);
  CHECK_FALSE(*read_back(eager).cuda_graphs);
  // Megatron-LM's other spellings: --cuda-graph-impl none is eager, the old switches are not.
  CHECK_FALSE(*parse_megatron_args("--cuda-graph-impl none", "args").cuda_graphs);
  CHECK(*parse_megatron_args("--cuda-graph-impl local", "args").cuda_graphs);
  CHECK(*parse_megatron_args("--external-cuda-graph", "args").cuda_graphs);
  CHECK(*parse_megatron_args("--enable-cuda-graph", "args").cuda_graphs);
}

TEST_CASE("Megatron-LM: an MoE model's dispatcher is written and read back") {
  JobSpec j;
  Plan p = make(1, 1, 8, 4, 1);
  p.zero = 1;
  const Cluster c = test::preset_cluster("dgx-h100", 4);
  const Model mixtral = test::preset_model("mixtral-8x7b");
  // alltoall (topoplan's default) is written: Megatron-core's own default, allgather, is not it.
  const std::string a2a = megatron_args_for(c, mixtral, j, p);
  CHECK_THAT(a2a, Catch::Contains("--moe-token-dispatcher-type alltoall"));
  CHECK(*read_back(a2a).moe_dispatcher == MoeDispatcher::alltoall);
  j.moe_dispatcher = MoeDispatcher::flex;
  const std::string flex = megatron_args_for(c, mixtral, j, p);
  CHECK_THAT(flex, Catch::Contains(
                       "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep"));
  CHECK(*read_back(flex).moe_dispatcher == MoeDispatcher::flex);
  CHECK(*parse_megatron_args("--moe-token-dispatcher-type allgather", "args").moe_dispatcher ==
        MoeDispatcher::alltoall);
  // A dense model has no dispatcher to write.
  CHECK_THAT(llama8b_megatron_args(j, make(8, 1, 1, 4, 1)), !Catch::Contains("dispatcher"));
}

TEST_CASE("Megatron-LM: MTP layers and recomputed modules are written and read back") {
  Cluster c = test::preset_cluster("hgx-h800", 16);
  Model m = test::preset_model("deepseek-v3");
  JobSpec j = test::job(4096, 256);
  j.dtype = Dtype::fp8;
  j.recompute_modules = kRecomputeLayernorm | kRecomputeMlaUpProj | kRecomputeMoeAct;
  Plan p = make(1, 1, 8, 8, 16);
  p.zero = 1;
  p.first_stage_layers = 4;
  p.last_stage_layers = 1;  // Megatron-Bridge's DeepSeek-V3 split at pp 16
  const std::string text = megatron_args_for(c, m, j, p);
  CHECK_THAT(text, Catch::Contains(" --mtp-num-layers 1"));
  CHECK_THAT(text,
             Catch::Contains(" --recompute-granularity selective --recompute-modules layernorm "
                             "mla_up_proj moe_act"));
  CHECK_THAT(text, Catch::Contains("--decoder-first-pipeline-num-layers 4 "
                                   "--decoder-last-pipeline-num-layers 1"));
  const ImportedPlan back = read_back(text);
  REQUIRE(back.recompute_modules);
  CHECK(*back.recompute_modules == j.recompute_modules);
  CHECK(back.plan.recompute == Recompute::none);  // selective without core_attn: modules only
  // --mtp-num-layers is a training argument: the job's count, not the model's shape (session 30).
  CHECK(back.mtp_layers == 1);
  CHECK(read_back("--tensor-model-parallel-size 1").mtp_layers == 0);  // left out: none trained
  // With the attention core recomputed too, core_attn leads the list and reads back selective.
  p.recompute = Recompute::selective;
  const std::string both = megatron_args_for(c, m, j, p);
  CHECK_THAT(both, Catch::Contains("--recompute-modules core_attn layernorm"));
  CHECK(read_back(both).plan.recompute == Recompute::selective);
  // Modules the search added to the plan (Plan::recompute_modules) are written with the job's,
  // in Megatron-core's order, and read back as the job's: the same recomputation.
  JobSpec ln = j;
  ln.recompute_modules = kRecomputeLayernorm;
  Plan added = p;
  added.recompute_modules = kRecomputeMoeAct;
  const std::string merged = megatron_args_for(c, m, ln, added);
  CHECK_THAT(merged, Catch::Contains("--recompute-modules core_attn layernorm moe_act"));
  CHECK(*read_back(merged).recompute_modules == (kRecomputeLayernorm | kRecomputeMoeAct));
  // All-gather CP is written (p2p, Megatron-core's default, is not) and read back.
  JobSpec ag = j;
  ag.cp_comm = CpComm::all_gather;
  Plan cp2 = make(1, 2, 8, 4, 16);
  cp2.zero = 1;
  const std::string cp_text = megatron_args_for(c, m, ag, cp2);
  CHECK_THAT(cp_text, Catch::Contains(" --cp-comm-type all_gather"));
  CHECK(read_back(cp_text).cp_comm == CpComm::all_gather);
  CHECK(read_back("--cp-comm-type allgather").cp_comm == CpComm::all_gather);  // its help's name
  CHECK_THAT(megatron_args_for(c, m, j, cp2), !Catch::Contains("--cp-comm-type"));
  added.recompute = Recompute::full;  // full granularity: the modules are moot, none written
  CHECK_THAT(megatron_args_for(c, m, JobSpec(j), added), !Catch::Contains("--recompute-modules"));
  // A layout string puts the MTP layer before the loss; m reads back as no decoder layer.
  p.recompute = Recompute::none;
  p.first_stage_layers = p.last_stage_layers = 0;
  p.stage_layers = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 2};
  const std::string layout = megatron_args_for(c, m, j, p);
  CHECK_THAT(layout, Catch::Contains("|ttt|ttmL\""));
  ImportedPlan l = read_back(layout);
  Plan q = l.plan;
  apply_layer_choices(l, 61, q);
  CHECK(q.stage_layers == p.stage_layers);
  CHECK_THROWS_WITH(parse_megatron_args("--recompute-modules core_attn mlp", "a"),
                    Catch::Contains("'mlp'"));
}
