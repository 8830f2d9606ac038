/// libFuzzer target for one input parser (issue 11, item 3), chosen at build time by
/// TOPOPLAN_FUZZ_PARSER: cluster, model, calibration, ranks, plan, megatron, nvidia_smi,
/// nccl_tests (the parser and the fit that follows it), nccl_xml, slurm (topology.conf and the
/// cluster built from it), runs (calibrate --runs: the key check, every row read, and the rows on
/// up to kFuzzRunNodes servers predicted).
/// A parser may reject its input (InputError) but never crash, leak, hang or throw anything
/// else; what it accepts is also validated the way the CLI would (Cluster, Model).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "topoplan/calibration.hpp"
#include "topoplan/calibration_runs.hpp"
#include "topoplan/error.hpp"
#include "topoplan/import/megatron_args.hpp"
#include "topoplan/import/nccl_tests.hpp"
#include "topoplan/import/nccl_xml.hpp"
#include "topoplan/import/nvidia_smi.hpp"
#include "topoplan/import/plan_json.hpp"
#include "topoplan/import/slurm.hpp"
#include "topoplan/model.hpp"
#include "topoplan/nccl_fit.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/topology.hpp"

namespace {

/// Rows on more servers than this are read but not predicted: a row's search grows with its
/// cluster, and a fuzzed 2,048-node row would time the fuzzer out without finding anything new.
constexpr double kFuzzRunNodes = 4;

/// Which rows of a runs file to predict, in file order; empty when a row names a cluster or a
/// model that is not a preset (a path: the fuzzer must not read the machine's files, /dev/stdin).
std::vector<bool> runs_to_predict(const std::string& text) {
  using namespace topoplan;
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("runs") || !doc["runs"].is_array()) return {};
  auto named = [](const nlohmann::json& row, const char* key, const char* kind) {
    if (!row.contains(key) || !row[key].is_string()) return true;
    for (const auto& n : preset_names(kind))
      if (n == row[key].get<std::string>()) return true;
    return false;
  };
  std::vector<bool> predict;
  for (const auto& row : doc["runs"]) {
    if (!row.is_object()) return {};
    if (!named(row, "cluster", "clusters") || !named(row, "model", "models")) return {};
    const auto nodes = row.value("nodes", nlohmann::json());
    predict.push_back(nodes.is_number() && nodes.get<double>() <= kFuzzRunNodes);
  }
  return predict;
}

void parse_runs(const std::string& text) {
  using namespace topoplan;
  const RunCorpus corpus{text, "runs.json"};
  warn_unknown_run_keys(corpus);
  const std::vector<bool> predict = runs_to_predict(text);
  if (predict.empty()) return;
  std::size_t row = 0;  // run_calibration_where asks about each row in file order
  (void)run_calibration_where(
      Calibration{},
      [&](const CalibrationResult&) { return row < predict.size() && predict[row++]; }, corpus);
}

void parse(const std::string& text) {
  using namespace topoplan;
  const std::string parser = TOPOPLAN_FUZZ_PARSER;
  if (parser == "cluster") {
    const Cluster c(parse_cluster_with_presets(text, "fuzz.json"), "fuzz.json");
    (void)c.gpu_count();
  } else if (parser == "model") {
    const Model m(parse_model_json(text, "config.json"), "config.json");
    (void)m.counts.total_params;
  } else if (parser == "calibration") {
    Calibration cal;
    apply_calibration_json(text, "calibration.json", cal);
  } else if (parser == "ranks") {
    (void)parse_ranks_json(text, "ranks.json");
  } else if (parser == "plan") {
    (void)parse_plan_json(text, "plan.json");
  } else if (parser == "megatron") {
    (void)parse_megatron_args(text, "--megatron-args");
  } else if (parser == "nvidia_smi") {
    (void)parse_nvidia_smi_topo(text, "topo.txt");
  } else if (parser == "slurm") {
    // Switch trees on 8-GPU servers; block files (NVLink domains) on NVL72 racks, whose servers
    // are several hosts, and back through the cluster file's reader.
    const auto lines = parse_slurm_topology(text, "topology.conf");
    const bool blocks =
        std::any_of(lines.begin(), lines.end(), [](const SlurmSwitch& s) { return s.block; });
    const ClusterSpec s = cluster_from_slurm(
        lines, load_cluster(blocks ? "gb200-nvl72" : "dgx-h100", "fuzz"), "topology.conf");
    const Cluster c(s, "topology.conf");
    (void)c.gpu_count();
    if (blocks)
      (void)parse_cluster_json(cluster_json(s), "back.json", [&s](auto&&...) { return s.gpu; });
  } else if (parser == "nccl_xml") {
    (void)parse_nccl_topo_xml(text, "topo.xml");
  } else if (parser == "runs") {
    parse_runs(text);
  } else if (parser == "nccl_tests") {
    Calibration cal;
    (void)fit_nccl_tests(load_cluster("dgx-h100", "fuzz"), cal,
                         {parse_nccl_tests(text, "log.txt", "all_reduce")});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  topoplan::set_warning_sink([](const std::string&) {});
  try {
    parse(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const topoplan::InputError&) {
    // rejected with a message: the expected outcome for bad input
  }
  return 0;
}
