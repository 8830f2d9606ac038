// `topoplan model NAME|FILE`: what topoplan derives from a model (parameters, FLOPs, KV cache).
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "topoplan/presets.hpp"

namespace topoplan::cli {
namespace {

struct ModelArgs {
  std::string model;
  std::int64_t seq_len = 4096;
  OutputOptions out;
};

const char* attention_kind(const ModelSpec& m) {
  if (m.mla()) return "mla";
  return m.kv_heads == m.heads ? "mha" : "gqa";
}

int run_model(const ModelArgs& a) {
  const Model m(load_model(a.model, "model"), a.model);
  const auto& k = m.counts;
  const double s = static_cast<double>(a.seq_len);
  const double train = model_flops_per_token(k, m.spec.layers, s);  // forward + backward
  // bf16 KV cache per token over all layers (MLA: the compressed latent).
  const double kv_bytes = k.kv_cache_elems * 2.0 * static_cast<double>(m.spec.layers);
  const std::int64_t moe = k.moe_layers, dense = m.spec.layers - moe;
  std::string text;
  if (a.out.format == "json") {
    nlohmann::ordered_json j;
    j["schema"] = "topoplan.model/v1";
    j["name"] = m.spec.name;
    j["params_total"] = k.total_params;
    j["params_active"] = k.active_params;
    j["seq_len"] = a.seq_len;
    j["flops_per_token"] = train;
    j["forward_flops_per_token"] = train / 3.0;
    j["kv_cache_bytes_per_token"] = kv_bytes;
    j["layers"] = {{"total", m.spec.layers}, {"dense", dense}, {"moe", moe}};
    j["attention"] = attention_kind(m.spec);
    j["hidden"] = m.spec.hidden;
    j["heads"] = m.spec.heads;
    j["kv_heads"] = m.spec.kv_heads;
    j["vocab"] = m.spec.vocab;
    j["sliding_window"] = m.spec.sliding_window;
    j["sliding_window_layers"] = m.spec.sliding_layers;
    j["mtp_layers"] = m.spec.mtp_layers;
    j["params_mtp"] = k.mtp_params + k.mtp_expert_params;
    text = j.dump(2) + "\n";
  } else {
    text +=
        fmt::format("{}: {} layers ({} dense, {} MoE), hidden {}, {} heads ({} kv, {}), vocab {}\n",
                    m.spec.name, m.spec.layers, dense, moe, m.spec.hidden, m.spec.heads,
                    m.spec.kv_heads, attention_kind(m.spec), m.spec.vocab);
    text += fmt::format("parameters         {:.3f} B total, {:.3f} B active per token\n",
                        static_cast<double>(k.total_params) / 1e9,
                        static_cast<double>(k.active_params) / 1e9);
    text += fmt::format(
        "FLOPs per token    {:.4g} G training (forward + backward), {:.4g} G "
        "forward, at sequence {}\n",
        train / 1e9, train / 3e9, a.seq_len);
    text += fmt::format("KV cache per token {:.1f} KiB in bf16 over all layers\n", kv_bytes / 1024);
    if (m.spec.mtp_layers > 0)
      text += fmt::format(
          "multi-token pred.  {} module(s), {:.3f} B parameters beside the total: trained with the "
          "model on the last pipeline stage (in the training FLOPs above), not served\n",
          m.spec.mtp_layers, static_cast<double>(k.mtp_params + k.mtp_expert_params) / 1e9);
    if (m.spec.sliding_layers > 0)
      text += fmt::format(
          "sliding window     {} tokens on {} of {} layers (they attend to and cache that many: "
          "attention FLOPs above at {:.1f}% of full causal attention's)\n",
          m.spec.sliding_window, m.spec.sliding_layers, m.spec.layers,
          100.0 * attention_span_factor(k, s));
  }
  write_output(a.out.path, text);
  return 0;
}

}  // namespace

Runner register_model(CLI::App& cmd) {
  auto a = std::make_shared<ModelArgs>();
  cmd.add_option("model", a->model, "model preset name or Hugging Face config.json")->required();
  cmd.add_option("--seq-len", a->seq_len, "sequence length for the attention FLOPs")
      ->capture_default_str();
  add_output_options(cmd, a->out, {"table", "json"});
  return [a] { return run_model(*a); };
}

}  // namespace topoplan::cli
