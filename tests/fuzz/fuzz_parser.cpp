/// libFuzzer target for one input parser (issue 11, item 3), chosen at build time by
/// TOPOPLAN_FUZZ_PARSER: cluster, model, calibration, ranks, plan, megatron, nvidia_smi,
/// nccl_tests (the parser and the fit that follows it), nccl_xml, slurm (topology.conf and the
/// cluster built from it).
/// A parser may reject its input (InputError) but never crash, leak, hang or throw anything
/// else; what it accepts is also validated the way the CLI would (Cluster, Model).
#include <cstddef>
#include <cstdint>
#include <string>

#include "topoplan/calibration.hpp"
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
    const ClusterSpec s = cluster_from_slurm(parse_slurm_topology(text, "topology.conf"),
                                             load_cluster("dgx-h100", "fuzz"), "topology.conf");
    const Cluster c(s, "topology.conf");
    (void)c.gpu_count();
  } else if (parser == "nccl_xml") {
    (void)parse_nccl_topo_xml(text, "topo.xml");
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
