#include <fmt/format.h>

#include <memory>

#include "cli/common.hpp"
#include "topoplan/calibration.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/units.hpp"

namespace topoplan::cli {
namespace {

std::string presets_json() {
  std::string text = "{\n  \"schema\": \"topoplan.presets/v1\"";
  for (const char* kind : {"clusters", "gpus", "models"}) {
    text += fmt::format(",\n  \"{}\": [", kind);
    std::string sep;
    for (const auto& n : preset_names(kind)) {
      text += fmt::format("{}\"{}\"", sep, n);
      sep = ", ";
    }
    text += "]";
  }
  text += ",\n  \"stacks\": [";
  std::string sep;
  for (const auto& s : software_stacks()) {
    text += fmt::format("{}\"{}\"", sep, s.name);
    sep = ", ";
  }
  text += "],\n  \"runtimes\": [";
  sep.clear();
  for (int r = 0; r < kRuntimes; ++r) {
    text += fmt::format("{}\"{}\"", sep, to_string(static_cast<Runtime>(r)));
    sep = ", ";
  }
  text += "]\n}\n";
  return text;
}

std::string presets_table() {
  std::string text = "clusters (--cluster NAME, --nodes N):\n";
  for (const auto& n : preset_names("clusters")) {
    Cluster c(load_cluster(n, "preset"), n);
    text += fmt::format("  {:<16} {} x {} per server, {} x {} Gb/s NICs, tiers:", n,
                        c.gpus_per_server(), c.gpu().name, c.spec().nics_per_server,
                        c.spec().nic_bandwidth * 8 / 1e9);
    for (const auto& t : c.spec().tiers) text += " " + t.name;
    text += fmt::format(" (default {} servers)\n", c.spec().nodes);
  }
  text += "gpus:\n";
  for (const auto& n : preset_names("gpus")) {
    GpuSpec g = load_gpu(n, "preset");
    text += fmt::format("  {:<15} {:>6.0f} TFLOP/s bf16, {:>5.0f} GiB, {:.2f} TB/s HBM\n", n,
                        units::to_TFLOPs(g.peak_flops), units::to_GiB(g.memory_bytes),
                        g.hbm_bandwidth / 1e12);
  }
  text += "models (--model NAME, or a Hugging Face config.json):\n";
  for (const auto& n : preset_names("models")) {
    Model m(load_model(n, "preset"), n);
    text += fmt::format("  {:<14} {:>6.1f}B parameters, {} layers, hidden {}, {} heads ({} kv)", n,
                        static_cast<double>(m.counts.total_params) / 1e9, m.spec.layers,
                        m.spec.hidden, m.spec.heads, m.spec.kv_heads);
    if (m.spec.moe())
      text += fmt::format(
          ", MoE {} experts top-{}{}", m.spec.experts, m.spec.top_k,
          m.spec.shared_experts ? fmt::format(" + {} shared", m.spec.shared_experts) : "");
    if (m.spec.mla()) text += ", MLA";
    if (m.spec.mtp_layers > 0) text += fmt::format(", MTP {}", m.spec.mtp_layers);
    text += "\n";
  }
  text += "stacks (--stack NAME; explicit flags win):\n";
  text += fmt::format(
      "  {:<14} {:<6} {:<10} {:<11} {:<14} {:<13} {:<15} {:<11} {:<8} {:<18} {:<17} {:<9} {}\n",
      "name", "flash", "attention", "tp overlap", "fp8 tp gather", "grad overlap", "gather overlap",
      "pp overlap", "ZeRO", "sequence parallel", "pipeline layout", "offload", "modules");
  auto yn = [](bool b) { return b ? "on" : "off"; };
  for (const auto& s : software_stacks())
    text += fmt::format(
        "  {:<14} {:<6} {:<10} {:<11} {:<14} {:<13} {:<15} {:<11} {:<8} {:<18} {:<17} {:<9} {}\n",
        s.name, yn(s.flash_attention), s.fa2_attention ? "fa2" : "fused", yn(s.tp_comm_overlap),
        s.fp8_tp_all_gather ? "fp8" : "bf16", yn(s.overlap_grad_reduce), yn(s.overlap_param_gather),
        yn(s.overlap_p2p), s.zero < 0 ? "searched" : std::to_string(s.zero),
        s.sequence_parallel ? yn(*s.sequence_parallel) : "searched",
        s.flexible_pipeline_layout ? "flexible" : "multiples of vpp",
        s.activation_offload ? "searched" : "off", s.recompute_modules ? "searched" : "off");
  const Calibration cal;
  text += "runtimes (--runtime NAME, with --inference; fixed costs from the calibration):\n";
  text += fmt::format("  {:<25} {:>9} {:>14} {:>11}  {}\n", "name", "per layer", "per collective",
                      "per request", "all-reduce");
  for (int r = 0; r < kRuntimes; ++r)
    text +=
        fmt::format("  {:<25} {:>6.1f} us {:>11.1f} us {:>8.1f} ms  {}\n",
                    to_string(static_cast<Runtime>(r)), cal.decode_layer_overhead[r] * 1e6,
                    cal.decode_collective_overhead[r] * 1e6, cal.request_overhead[r] * 1e3,
                    has_one_shot_all_reduce(static_cast<Runtime>(r)) ? "NCCL's or a one-shot kernel"
                                                                     : "NCCL's");
  return text;
}

int run_presets(const OutputOptions& out) {
  write_output(out.path, out.format == "json" ? presets_json() : presets_table());
  return 0;
}

}  // namespace

Runner register_presets(CLI::App& cmd) {
  auto out = std::make_shared<OutputOptions>();
  add_output_options(cmd, *out, {"table", "json"});
  return [out] { return run_presets(*out); };
}

}  // namespace topoplan::cli
