#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/error.hpp"
#include "topoplan/fingerprint.hpp"

using namespace topoplan;

namespace {

/// Megatron-LM SC'21 appendix: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), which leaves out
/// the final LayerNorm (2h).
double megatron_params(double l, double h, double V, double s) {
  return 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
}

ModelSpec gpt(std::int64_t h, std::int64_t l, std::int64_t a, std::int64_t V, std::int64_t s) {
  ModelSpec m;
  m.name = "gpt";
  m.hidden = h;
  m.layers = l;
  m.heads = a;
  m.kv_heads = a;
  m.head_dim = h / a;
  m.ffn = 4 * h;
  m.vocab = V;
  m.positions = s;
  m.biases = true;
  m.layernorm_bias = true;
  m.tied_embeddings = true;
  return m;
}

}  // namespace

TEST_CASE("parameter counts match the published sizes") {
  // Published: Llama 3 8B 8.03B, 70B 70.6B, 405B 405B (Meta model cards); GPT-3 175B.
  CHECK(test::preset_model("llama3-8b").counts.total_params == 8'030'261'248);
  CHECK(static_cast<double>(test::preset_model("llama3-70b").counts.total_params) ==
        Approx(70.6e9).epsilon(0.002));
  CHECK(static_cast<double>(test::preset_model("llama3.1-405b").counts.total_params) ==
        Approx(405.8e9).epsilon(0.002));
  CHECK(static_cast<double>(test::preset_model("gpt3-175b").counts.total_params) ==
        Approx(175e9).epsilon(0.005));
}

TEST_CASE("GPT parameter count equals Megatron's closed form for every Table 1 row") {
  struct Row {
    std::int64_t h, l, a;
  };
  for (Row r : {Row{2304, 24, 24}, Row{6144, 40, 48}, Row{12288, 80, 96}, Row{25600, 128, 160}}) {
    Model m(gpt(r.h, r.l, r.a, 51200, 2048));
    double expected =
        megatron_params(static_cast<double>(r.l), static_cast<double>(r.h), 51200, 2048) +
        2.0 * static_cast<double>(r.h);
    CHECK(static_cast<double>(m.counts.total_params) == Approx(expected).epsilon(1e-12));
  }
  // Table 1 names these 1.7B, 18.4B, 145.6B: the counts round to those to one decimal.
  auto billions = [](std::int64_t h, std::int64_t l, std::int64_t a) {
    double p = static_cast<double>(Model(gpt(h, l, a, 51200, 2048)).counts.total_params);
    return std::round(p / 1e8) / 10;
  };
  CHECK(billions(2304, 24, 24) == 1.7);
  CHECK(billions(6144, 40, 48) == 18.4);
  CHECK(billions(12288, 80, 96) == 145.6);
}

TEST_CASE("FLOPs per token equal Megatron's formula: 72 (model) and 96 (full recompute)") {
  const double l = 80, h = 12288, V = 51200, s = 2048;
  Model m(gpt(12288, 80, 96, 51200, 2048));
  // 72 l h^2 + 12 l s h + 6 V h per token without recomputation (the logits run once forward,
  // twice backward).
  CHECK(model_flops_per_token(m.counts, 80, s) ==
        Approx(72 * l * h * h + 12 * l * s * h + 6 * V * h).epsilon(1e-12));
  // 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per step, divided by B s.
  CHECK(hardware_flops_per_token(m, s, Recompute::full) ==
        Approx(96 * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))).epsilon(1e-12));
  CHECK(hardware_flops_per_token(m, s, Recompute::none) ==
        Approx(model_flops_per_token(m.counts, 80, s)));
}

TEST_CASE("a Hugging Face GPT-2 config.json reads with its defaults") {
  ModelSpec m = load_model(TOPOPLAN_TEST_DATA "/gpt2/config.json", "--model");
  CHECK(m.name == "gpt2");  // from the folder: no "name" key
  CHECK(m.ffn == 4 * 768);  // n_inner: null
  CHECK(m.tied_embeddings);
  CHECK(Model(m).counts.total_params == 124'439'808);  // GPT-2 small, as published
}

TEST_CASE("MoE presets: parameters and active FLOPs match the published sizes") {
  // Mixtral 8x7B: 46.7B parameters, 12.9B active per token.
  Model mix = test::preset_model("mixtral-8x7b");
  CHECK(mix.spec.moe());
  CHECK(static_cast<double>(mix.counts.total_params) == Approx(46.7e9).epsilon(0.002));
  const double active_mix = mix.counts.layer_matmul_flops / 2 * 32 + 2.0 * 32000 * 4096;
  CHECK(active_mix == Approx(12.9e9).epsilon(0.01));
  // DeepSeek-V3: 671B parameters, 37B activated (without the 14B MTP module, counted apart).
  Model ds = test::preset_model("deepseek-v3");
  CHECK(ds.spec.mla());
  CHECK(ds.counts.moe_layers == 58);
  CHECK(static_cast<double>(ds.counts.total_params) == Approx(671e9).epsilon(0.002));
  const double active_ds = ds.counts.layer_matmul_flops / 2 * 61 + 2.0 * 129280 * 7168;
  CHECK(active_ds == Approx(37e9).epsilon(0.03));
  // A token activates top-2 of Mixtral's 14336-wide experts; DeepSeek's 8 + 1 shared x 2048
  // equals its dense layers' 18432.
  CHECK(mix.counts.active_ffn == 2 * 14336);
  CHECK(ds.counts.active_ffn == Approx(18432));
  // MLA caches the compressed latent: 512 + 64 elements per token per layer, not split by TP.
  CHECK(ds.counts.kv_cache_elems == 576);
  CHECK_FALSE(ds.counts.kv_cache_split);
}

TEST_CASE("Llama config.json keys: GQA and gated MLP") {
  Model m = test::preset_model("llama3-70b");
  CHECK(m.spec.kv_heads == 8);
  CHECK(m.spec.head_dim == 128);
  CHECK(m.spec.gated_mlp);
  // One layer: Q,O 8192^2 each, K,V 8192x1024 each, three 8192x28672, two RMSNorm weights.
  CHECK(m.counts.layer_params ==
        2 * 8192LL * 8192 + 2 * 8192LL * 1024 + 3 * 8192LL * 28672 + 2 * 8192);
}

TEST_CASE("bad model input is one clear line") {
  CHECK_THROWS_WITH(parse_model_json(R"({"hidden_size": 4096})", "config.json"),
                    "config.json: num_hidden_layers: required field is missing");
  CHECK_THROWS_WITH(
      parse_model_json(R"({"foo": 1})", "config.json"),
      Catch::StartsWith("config.json: (top level): expected a Hugging Face config.json"));
  CHECK_THROWS_WITH(
      parse_model_json(R"({"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
        "num_key_value_heads": 5, "intermediate_size": 10, "vocab_size": 10})",
                       "config.json"),
      "config.json: num_key_value_heads: expected a divisor of num_attention_heads (32), got 5");
  CHECK_THROWS_WITH(
      load_model("no-such-model", "--model"),
      Catch::StartsWith("--model: 'no-such-model' is neither a preset (deepseek-v3, gpt-oss-120b"));
}

TEST_CASE("Qwen2-MoE config keys read as MoE, and text_config nests the language model") {
  // Issue 15.6: num_experts / moe_intermediate_size / shared_expert_intermediate_size were read
  // as a dense model. Qwen1.5-MoE-A2.7B (its config.json): 14.3B parameters in total (Qwen's
  // release blog, "Qwen1.5-MoE: Matching 7B Model Performance with 1/3 Activated Parameters").
  const char* qwen = R"({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
    "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
    "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_attention_heads": 16,
    "num_key_value_heads": 16, "vocab_size": 151936, "hidden_act": "silu",
    "tie_word_embeddings": false, "decoder_sparse_step": 1, "mlp_only_layers": []})";
  const ModelSpec s = parse_model_json(qwen, "Qwen1.5-MoE-A2.7B/config.json");
  CHECK(s.moe());
  CHECK(s.experts == 60);
  CHECK(s.expert_ffn == 1408);
  CHECK(s.shared_experts == 1);
  CHECK(s.shared_ffn() == 5632);
  const Model m(s);
  CHECK(static_cast<double>(m.counts.total_params) == Approx(14.3e9).epsilon(0.015));
  // A multimodal wrapper: the same keys under text_config, the name from the outer config.
  const std::string wrapped =
      std::string(
          R"({"name": "wrapped", "model_type": "x", "vision_config": {}, "text_config": )") +
      qwen + "}";
  const ModelSpec w = parse_model_json(wrapped, "config.json");
  CHECK(w.name == "wrapped");
  CHECK(Model(w).counts.total_params == m.counts.total_params);
  // Dense layers among the MoE ones are not modelled: an error, not a silent dense read.
  std::string sparse = qwen;
  sparse.replace(sparse.find("\"decoder_sparse_step\": 1"), 24, "\"decoder_sparse_step\": 2");
  CHECK_THROWS_WITH(parse_model_json(sparse, "q.json"),
                    Catch::Contains("q.json: decoder_sparse_step: expected 1"));
}

TEST_CASE("sliding-window attention: which layers, the window, and the attention it saves") {
  const std::string base =
      R"("hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000)";
  auto read = [&](const std::string& extra) {
    return Model(parse_model_json("{" + base + extra + "}", "m.json"));
  };
  // Mistral 7B v0.1: a 4,096-token window on every layer.
  const Model mistral = read(R"(, "sliding_window": 4096)");
  CHECK(mistral.spec.sliding_window == 4096);
  CHECK(mistral.spec.sliding_layers == 32);
  // Qwen2: use_sliding_window false (or a null window) keeps full attention; true slides the
  // layers from max_window_layers on.
  CHECK(read(R"(, "sliding_window": 4096, "use_sliding_window": false)").spec.sliding_layers == 0);
  CHECK(read(R"(, "sliding_window": null)").spec.sliding_layers == 0);
  CHECK(read(R"(, "sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 28)")
            .spec.sliding_layers == 4);
  // Gemma 3 (every 6th layer full) and Gemma 2 / gpt-oss (every other layer).
  CHECK(read(R"(, "sliding_window": 1024, "sliding_window_pattern": 6)").spec.sliding_layers == 27);
  CHECK(read(R"(, "sliding_window": 1024, "model_type": "gemma2")").spec.sliding_layers == 16);
  // gpt-oss: layer_types names them.
  const Model oss = test::preset_model("gpt-oss-120b");
  CHECK(oss.spec.sliding_layers == 18);
  CHECK(oss.spec.sliding_window == 128);
  // Up to the window nothing changes; at 2w a sliding layer attends to (w(w+1)/2 + w*w)/(2w)
  // keys on average against (2w+1)/2: about 3/4.
  const ModelCounts& k = mistral.counts;
  CHECK(attention_span_factor(k, 4096) == Approx(1.0));
  CHECK(attention_span_factor(k, 8192) ==
        Approx((4096.0 * 4097 / 2 + 4096.0 * 4096) / 8192 / (8193.0 / 2)));
  CHECK(attention_span_factor_at(k, 16384) == Approx(0.25));
  // Half the layers sliding: halfway between.
  CHECK(attention_span_factor_at(oss.counts, 256) == Approx(0.5 + 0.5 * 0.5));
  // The attention FLOPs per token at 32k are smaller than the same model without the window.
  const Model full = read("");
  CHECK(model_flops_per_token(k, 32, 32768) < model_flops_per_token(full.counts, 32, 32768));
  CHECK(model_flops_per_token(k, 32, 2048) == Approx(model_flops_per_token(full.counts, 32, 2048)));
  // Written back as config.json, the same layers slide.
  const Model back(parse_model_json(model_config_json(oss.spec), "back.json"));
  CHECK(back.spec.sliding_layers == 18);
  CHECK(back.spec.sliding_window == 128);
  // Bad input: layer_types of the wrong length or kind, a window missing.
  CHECK_THROWS_WITH(read(R"(, "layer_types": ["full_attention"])"),
                    Catch::Contains("layer_types: expected one entry per layer (32)"));
  std::string odd = R"(, "layer_types": ["global")";
  for (int i = 1; i < 32; ++i) odd += R"(, "full_attention")";
  CHECK_THROWS_WITH(read(odd + "]"), Catch::Contains("layer_types: expected entries"));
  CHECK_THROWS_WITH(read(R"(, "layer_types": ["sliding_attention")" +
                         [] {
                           std::string rest;
                           for (int i = 1; i < 32; ++i) rest += R"(, "full_attention")";
                           return rest;
                         }() +
                         "]"),
                    Catch::Contains("sliding_window"));
}

TEST_CASE("a model spec written as config.json reads back to the same model") {
  for (const auto& name : preset_names("models")) {
    const ModelSpec s = load_model(name, "test");
    const ModelSpec back = parse_model_json(model_config_json(s), "back");
    CHECK(fingerprint(Model(back)) == fingerprint(Model(s)));
    CHECK(Model(back).counts.total_params == Model(s).counts.total_params);
    CHECK(back.name == s.name);
  }
  ModelSpec gpt2 = parse_model_json(R"({"n_embd": 768, "n_layer": 12, "n_head": 12,
                                        "vocab_size": 50257})",
                                    "gpt2/config.json");
  CHECK(fingerprint(Model(parse_model_json(model_config_json(gpt2), "b"))) ==
        fingerprint(Model(gpt2)));
}

TEST_CASE("topoplan model's counts: published totals and active parameters within 1.5%") {
  // Meta: Llama 3.1 405B; Mistral: Mixtral 8x7B 46.7B total, 12.9B active; DeepSeek-V3
  // technical report: 671B total, 37B activated; Qwen2-72B (its model card): 72.7B.
  auto within = [](std::int64_t got, double published) {
    return std::abs(static_cast<double>(got) / published - 1.0) <= 0.015;
  };
  const Model llama = test::preset_model("llama3.1-405b");
  CHECK(within(llama.counts.total_params, 405e9));
  CHECK(llama.counts.active_params == llama.counts.total_params);  // dense
  const Model mix = test::preset_model("mixtral-8x7b");
  CHECK(within(mix.counts.total_params, 46.7e9));
  CHECK(within(mix.counts.active_params, 12.9e9));
  const Model ds = test::preset_model("deepseek-v3");
  CHECK(within(ds.counts.total_params, 671e9));
  CHECK(within(ds.counts.active_params, 37e9));
  const Model qwen(parse_model_json(
      R"({"model_type": "qwen2", "hidden_size": 8192, "intermediate_size": 29568,
          "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
          "vocab_size": 152064, "hidden_act": "silu", "tie_word_embeddings": false})",
      "Qwen2-72B/config.json"));
  CHECK(within(qwen.counts.total_params, 72.7e9));
}

TEST_CASE("multi-token prediction: DeepSeek-V3's module counted apart, read and written back") {
  Model ds = test::preset_model("deepseek-v3");
  REQUIRE(ds.spec.mtp_layers == 1);  // num_nextn_predict_layers
  // The report's 14B MTP module is its layer (an MoE one, as the last layer is), the 2h x h
  // projection and norms, and the checkpoint's own copies of the embedding and output head
  // (shared with the model in training, so not in mtp_params).
  const double shared_copies = 2.0 * 129280 * 7168;
  const double module = static_cast<double>(ds.counts.mtp_params + ds.counts.mtp_expert_params);
  CHECK(module + shared_copies == Approx(14e9).epsilon(0.05));
  CHECK(ds.counts.mtp_expert_params == 256LL * 3 * 7168 * 2048);
  // The total stays the 671B the report counts without it.
  CHECK(static_cast<double>(ds.counts.total_params) == Approx(671e9).epsilon(0.002));
  // Training FLOPs per token: one more layer, its projection and the logits once more.
  ModelSpec plain = ds.spec;
  plain.mtp_layers = 0;
  const Model without(plain);
  const double extra =
      model_flops_per_token(ds.counts, 61, 4096) - model_flops_per_token(without.counts, 61, 4096);
  const double layer_fwd =
      without.counts.layer_matmul_flops + without.counts.layer_attention_flops_per_seq * 4096;
  CHECK(extra > 3 * (layer_fwd + without.counts.logits_flops));
  CHECK(extra < 3 * (1.2 * layer_fwd + without.counts.logits_flops + 4.0 * 7168 * 7168));
  // Written as config.json and read back: the same spec and fingerprint.
  const ModelSpec back = parse_model_json(model_config_json(ds.spec), "back");
  CHECK(back.mtp_layers == 1);
  CHECK(fingerprint(Model(back)) == fingerprint(ds));
  // The fingerprint leaves MTP out: rank files made before the preset had it still read back.
  CHECK(fingerprint(without) == fingerprint(ds));
  // A module count out of range is an input error naming the key.
  plain.mtp_layers = 17;
  CHECK_THROWS_WITH(Model(plain, "m.json"), Catch::Contains("num_nextn_predict_layers"));
}
