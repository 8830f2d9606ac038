#include "topoplan/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "detail/json_input.hpp"
#include "topoplan/error.hpp"

namespace topoplan {

namespace {

/// A rough upper bound on the parameter count, in floating point so that it cannot overflow
/// whatever the fields hold: it guards the exact integer count.
double params_upper_bound(const ModelSpec& m) {
  auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double h = d(m.hidden);
  const double attn =
      h * (2 * d(m.heads) * d(m.head_dim) + 2 * d(m.kv_heads) * d(m.head_dim)) +
      d(m.q_lora_rank) * (h + d(m.heads) * d(m.qk_nope_head_dim + m.qk_rope_head_dim)) +
      d(m.kv_lora_rank) * (h + d(m.heads) * d(m.qk_nope_head_dim + m.v_head_dim)) +
      d(m.heads) * d(m.v_head_dim) * h + h * d(m.qk_rope_head_dim);
  const double mlp = 3 * h * d(m.ffn) + 3 * h * d(m.expert_ffn) * d(m.experts) +
                     3 * h * d(m.shared_ffn()) * d(m.shared_experts) + h * d(m.experts);
  return d(m.layers + m.mtp_layers) * (attn + mlp + 8 * h + 4 * d(m.ffn)) +
         h * (2 * d(m.vocab) + d(m.positions));
}

}  // namespace

void validate(const ModelSpec& m, const std::string& source,
              const std::function<std::string(std::string_view)>& key_path) {
  auto path = [&](const char* field) { return key_path ? key_path(field) : std::string(field); };
  // Physical ranges (well above any published model) so that no product of shapes overflows.
  auto need = [&](std::int64_t v, const char* field, std::int64_t max) {
    if (v <= 0 || v > max)
      throw_input(source, path(field),
                  fmt::format("expected a positive integer up to {}, got {}", max, v));
  };
  auto allow = [&](std::int64_t v, const char* field, std::int64_t max) {
    if (v < 0 || v > max)
      throw_input(source, path(field),
                  fmt::format("expected an integer from 0 to {}, got {}", max, v));
  };
  need(m.hidden, "hidden_size", kMaxModelWidth);
  need(m.layers, "num_hidden_layers", kMaxModelLayers);
  need(m.heads, "num_attention_heads", kMaxModelWidth);
  need(m.kv_heads, "num_key_value_heads", kMaxModelWidth);
  need(m.head_dim, "head_dim", kMaxModelWidth);
  need(m.ffn, "intermediate_size", kMaxModelFfn);
  need(m.vocab, "vocab_size", kMaxModelFfn);
  allow(m.positions, "n_positions", kMaxModelFfn);
  allow(m.experts, "num_experts", kMaxModelWidth);
  allow(m.top_k, "num_experts_per_tok", m.experts);
  allow(m.expert_ffn, "moe_intermediate_size", kMaxModelFfn);
  allow(m.shared_experts, "n_shared_experts", kMaxModelWidth);
  allow(m.shared_expert_ffn, "shared_expert_intermediate_size", kMaxModelFfn);
  allow(m.first_dense_layers, "first_k_dense_replace", m.layers - 1);
  allow(m.q_lora_rank, "q_lora_rank", kMaxModelWidth);
  allow(m.kv_lora_rank, "kv_lora_rank", kMaxModelWidth);
  allow(m.qk_nope_head_dim, "qk_nope_head_dim", kMaxModelWidth);
  allow(m.qk_rope_head_dim, "qk_rope_head_dim", kMaxModelWidth);
  allow(m.v_head_dim, "v_head_dim", kMaxModelWidth);
  allow(m.sliding_window, "sliding_window", kMaxModelFfn);
  allow(m.sliding_layers, "layer_types", m.layers);
  allow(m.mtp_layers, "num_nextn_predict_layers", kMaxMtpLayers);
  if (m.heads % m.kv_heads != 0)
    throw_input(
        source, path("num_key_value_heads"),
        fmt::format("expected a divisor of num_attention_heads ({}), got {}", m.heads, m.kv_heads));
  if (m.moe() && (m.top_k < 1 || m.expert_ffn < 1))
    throw_input(source, path(m.top_k < 1 ? "num_experts_per_tok" : "moe_intermediate_size"),
                "expected a positive integer for a mixture-of-experts model");
  const double params = params_upper_bound(m);
  if (params > kMaxModelParams)
    throw_input(source, "",
                fmt::format("the shapes give about {:.3g} parameters; expected at most {:.0e}",
                            params, kMaxModelParams));
}

ModelCounts count(const ModelSpec& m) {
  ModelCounts c;
  const std::int64_t h = m.hidden;
  std::int64_t attn = 0, q = 0, kv = 0;
  double scores = 0;  // forward FLOPs per token per unit of sequence length
  if (m.mla()) {
    const std::int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    const std::int64_t q_proj =
        m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * m.heads * qk
                          : h * m.heads * qk;
    attn = q_proj + h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank +
           m.kv_lora_rank * m.heads * (m.qk_nope_head_dim + m.v_head_dim) +
           m.heads * m.v_head_dim * h;
    q = m.heads * m.v_head_dim;
    kv = m.heads * m.v_head_dim;
    scores = 2.0 * static_cast<double>(m.heads) * static_cast<double>(qk + m.v_head_dim);
    c.kv_cache_elems = static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim);
    const auto d = [](std::int64_t v) { return static_cast<double>(v); };
    c.mla_up_flops = 2.0 * d(m.heads) *
                     ((m.q_lora_rank > 0 ? d(m.q_lora_rank) * d(qk) : 0.0) +
                      d(m.kv_lora_rank) * d(m.qk_nope_head_dim + m.v_head_dim));
    c.kv_cache_split = false;
  } else {
    q = m.heads * m.head_dim;
    kv = m.kv_heads * m.head_dim;
    attn = h * q + 2 * h * kv + q * h;      // Q, K, V, output
    scores = 4.0 * static_cast<double>(q);  // QK^T and AV
    c.kv_cache_elems = 2.0 * static_cast<double>(kv);
  }
  const std::int64_t mats = m.gated_mlp ? 3 : 2;
  const std::int64_t dense_mlp = mats * h * m.ffn;
  const std::int64_t bias = m.biases ? (q + 2 * kv) + h + m.ffn * (m.gated_mlp ? 2 : 1) + h : 0;
  const std::int64_t norms = 2 * h * (m.layernorm_bias ? 2 : 1);
  const std::int64_t expert = mats * h * m.expert_ffn;
  c.moe_layers = m.moe() ? m.layers - m.first_dense_layers : 0;
  const std::int64_t dense_layers = m.layers - c.moe_layers;
  const std::int64_t shared = m.shared_experts * mats * h * m.shared_ffn();
  const std::int64_t moe_mlp = m.experts * expert + shared + h * m.experts;
  const std::int64_t all_layers =
      m.layers * (attn + bias + norms) + dense_layers * dense_mlp + c.moe_layers * moe_mlp;
  c.layer_params = all_layers / m.layers;
  c.layer_expert_params = c.moe_layers * m.experts * expert / m.layers;
  c.embedding_params = m.vocab * h + m.positions * h;
  c.head_params = (m.tied_embeddings ? 0 : m.vocab * h) + h * (m.layernorm_bias ? 2 : 1);
  c.total_params = all_layers + c.embedding_params + c.head_params;
  c.q_dim = static_cast<double>(q);
  const double moe_width = c.moe_ffn =
      static_cast<double>(m.top_k * m.expert_ffn + m.shared_experts * m.shared_ffn());
  c.active_ffn =
      (static_cast<double>(dense_layers * m.ffn) + static_cast<double>(c.moe_layers) * moe_width) /
      static_cast<double>(m.layers);
  c.min_ffn = static_cast<double>(m.moe() ? std::min(m.ffn, m.expert_ffn) : m.ffn);
  c.kv_dim = static_cast<double>(kv);
  const double active_moe = static_cast<double>(m.top_k * expert + shared + h * m.experts);
  c.layer_matmul_flops =
      2.0 * (static_cast<double>(attn) + (static_cast<double>(dense_layers * dense_mlp) +
                                          static_cast<double>(c.moe_layers) * active_moe) /
                                             static_cast<double>(m.layers));
  c.layer_attention_flops_per_seq = scores;
  c.logits_flops = 2.0 * static_cast<double>(m.vocab * h);
  c.active_params = c.total_params - c.moe_layers * (m.experts - m.top_k) * expert;
  c.sliding_fraction = static_cast<double>(m.sliding_layers) / static_cast<double>(m.layers);
  c.sliding_window = static_cast<double>(m.sliding_window);
  // MTP: each module's layer of the last layer's kind, its projection and two input norms; the
  // head is the model's own, its logits once more per module (Megatron-Bridge's flop_utils.py).
  if (m.mtp_layers > 0) {
    const bool moe_last = c.moe_layers > 0;
    const std::int64_t module =
        attn + bias + norms + (moe_last ? moe_mlp : dense_mlp) + 2 * h * h + 2 * h;
    const std::int64_t experts = moe_last ? m.experts * expert : 0;
    c.mtp_layers = static_cast<double>(m.mtp_layers);
    c.mtp_params = m.mtp_layers * (module - experts);
    c.mtp_expert_params = m.mtp_layers * experts;
    c.mtp_matmul_flops =
        c.mtp_layers * 2.0 *
        (static_cast<double>(attn) + (moe_last ? active_moe : static_cast<double>(dense_mlp)) +
         2.0 * static_cast<double>(h * h) + static_cast<double>(m.vocab * h));
  }
  return c;
}

double attention_span_factor(const ModelCounts& c, double s) {
  const double w = c.sliding_window;
  if (c.sliding_fraction <= 0 || w <= 0 || s <= w) return 1.0;
  // Positions 1..s attend to min(p, w) keys; full causal attention to p: mean (s + 1) / 2.
  const double windowed = (w * (w + 1) / 2 + (s - w) * w) / s;
  return 1.0 - c.sliding_fraction + c.sliding_fraction * windowed / ((s + 1) / 2);
}

double attention_span_factor_at(const ModelCounts& c, double context) {
  const double w = c.sliding_window;
  if (c.sliding_fraction <= 0 || w <= 0 || context <= w) return 1.0;
  return 1.0 - c.sliding_fraction + c.sliding_fraction * w / context;
}

double model_flops_per_token(const ModelCounts& c, std::int64_t layers, double s) {
  const double attention = c.layer_attention_flops_per_seq * s * attention_span_factor(c, s);
  double fwd = static_cast<double>(layers) * (c.layer_matmul_flops + attention) + c.logits_flops +
               c.mtp_matmul_flops + c.mtp_layers * attention;
  return 3.0 * fwd;  // backward = 2 x forward
}

namespace {

/// A name for a config without one: "Meta-Llama-3-8B/config.json" -> "Meta-Llama-3-8B".
std::string name_from_path(const std::string& source, const std::string& fallback) {
  std::filesystem::path p(source);
  std::string stem = p.stem().string();
  if (stem == "config") stem = p.parent_path().filename().string();
  return stem.empty() ? fallback : stem;
}

}  // namespace

std::string model_config_json(const ModelSpec& m) {
  nlohmann::ordered_json j;
  j["name"] = m.name;
  using Json = nlohmann::ordered_json;
  // clang-format off
  if (m.biases || m.positions > 0) {  // GPT-2 family: biases, LayerNorm, learned positions
    j.update(Json{{"n_embd", m.hidden}, {"n_layer", m.layers}, {"n_head", m.heads}, {"n_inner", m.ffn},
                  {"vocab_size", m.vocab}, {"n_positions", m.positions},
                  {"tie_word_embeddings", m.tied_embeddings}, {"resid_pdrop", m.dropout ? 0.1 : 0.0}});
    return j.dump();
  }
  j.update(Json{{"hidden_size", m.hidden}, {"num_hidden_layers", m.layers}, {"num_attention_heads", m.heads},
                {"num_key_value_heads", m.kv_heads}, {"head_dim", m.head_dim}, {"intermediate_size", m.ffn},
                {"vocab_size", m.vocab}, {"hidden_act", m.gated_mlp ? "silu" : "gelu"},
                {"tie_word_embeddings", m.tied_embeddings}});
  if (m.dropout) j["hidden_dropout"] = 0.1;
  if (m.moe() && m.shared_expert_ffn > 0)  // Qwen-MoE keys carry the shared expert's own size
    j.update(Json{{"num_experts_per_tok", m.top_k}, {"num_experts", m.experts}, {"moe_intermediate_size", m.expert_ffn},
                  {"shared_expert_intermediate_size", m.shared_experts * m.shared_expert_ffn}});
  else if (m.moe())
    j.update(Json{{"num_experts_per_tok", m.top_k}, {"n_routed_experts", m.experts}, {"moe_intermediate_size", m.expert_ffn},
                  {"n_shared_experts", m.shared_experts}, {"first_k_dense_replace", m.first_dense_layers}});
  if (m.mla())
    j.update(Json{{"q_lora_rank", m.q_lora_rank}, {"kv_lora_rank", m.kv_lora_rank}, {"qk_nope_head_dim", m.qk_nope_head_dim},
                  {"qk_rope_head_dim", m.qk_rope_head_dim}, {"v_head_dim", m.v_head_dim}});
  if (m.mtp_layers > 0) j["num_nextn_predict_layers"] = m.mtp_layers;
  // clang-format on
  if (m.sliding_layers > 0) {  // the sliding layers spread evenly; only their count matters
    Json types = Json::array();
    for (std::int64_t i = 0; i < m.layers; ++i)
      types.push_back((i + 1) * m.sliding_layers / m.layers > i * m.sliding_layers / m.layers
                          ? "sliding_attention"
                          : "full_attention");
    j["sliding_window"] = m.sliding_window;
    j["layer_types"] = types;
  }
  if (!m.source.empty()) j["source"] = m.source;
  return j.dump();
}

namespace {

/// GPT-2 family keys (n_embd, n_layer, ...): biases, LayerNorm, learned positions.
void read_gpt2_keys(const detail::JsonCursor& c, const std::string& source, ModelSpec& m) {
  m.name = c.opt_string("name").value_or(name_from_path(source, "gpt2"));
  m.hidden = c.positive_int("n_embd");
  m.layers = c.positive_int("n_layer");
  m.heads = c.positive_int("n_head");
  m.kv_heads = m.heads;
  if (m.hidden % m.heads != 0) c.fail("n_head", fmt::format("a divisor of n_embd ({})", m.hidden));
  m.head_dim = m.hidden / m.heads;
  m.ffn = (c.has("n_inner") && !c.node().at("n_inner").is_null()) ? c.positive_int("n_inner")
                                                                  : 4 * m.hidden;
  m.vocab = c.positive_int("vocab_size");
  m.positions = c.int_at_least_or("n_positions", 0, 1024);
  m.tied_embeddings = c.boolean_or("tie_word_embeddings", true);
  m.biases = true;
  m.layernorm_bias = true;
  m.gated_mlp = false;
  m.dropout = c.number_in_or("resid_pdrop", 0, 1, 0.1) > 0;
}

bool has_value(const detail::JsonCursor& c, const char* key) {
  return c.has(key) && !c.node().at(key).is_null();
}

/// Mixtral: num_local_experts x intermediate_size. Qwen2/3-MoE: num_experts x
/// moe_intermediate_size, (Qwen2) one shared expert of shared_expert_intermediate_size, every
/// layer sparse. DeepSeek: n_routed_experts x moe_intermediate_size, n_shared_experts,
/// first_k_dense_replace.
void read_moe_keys(const detail::JsonCursor& c, ModelSpec& m) {
  if (c.has("num_local_experts")) {
    m.experts = c.positive_int("num_local_experts");
    m.expert_ffn = m.ffn;
  } else if (has_value(c, "num_experts")) {
    m.experts = c.positive_int("num_experts");
    m.expert_ffn = c.positive_int("moe_intermediate_size");
    const std::int64_t shared = c.int_at_least_or("shared_expert_intermediate_size", 0, 0);
    if (shared > 0) {
      m.shared_experts = 1;
      m.shared_expert_ffn = shared;
    }
    if (c.int_at_least_or("decoder_sparse_step", 1, 1) != 1)
      c.fail("decoder_sparse_step", "1 (every layer an MoE layer; other steps are not modelled)");
    if (c.has("mlp_only_layers") && c.node().at("mlp_only_layers").is_array() &&
        !c.node().at("mlp_only_layers").empty())
      c.fail("mlp_only_layers", "[] (dense layers among MoE layers are not modelled)");
  } else if (has_value(c, "n_routed_experts")) {
    m.experts = c.positive_int("n_routed_experts");
    m.expert_ffn = c.positive_int("moe_intermediate_size");
    m.shared_experts = c.int_at_least_or("n_shared_experts", 0, 0);
    m.first_dense_layers = c.int_at_least_or("first_k_dense_replace", 0, 0);
  }
  if (m.experts == 0) return;
  m.top_k = c.positive_int("num_experts_per_tok");
  if (m.top_k > m.experts)
    c.fail("num_experts_per_tok", fmt::format("at most the {} experts", m.experts));
  if (m.first_dense_layers >= m.layers)
    c.fail("first_k_dense_replace", fmt::format("fewer than the {} layers", m.layers));
}

/// Multi-head latent attention (DeepSeek-V2/V3).
void read_mla_keys(const detail::JsonCursor& c, ModelSpec& m) {
  if (!has_value(c, "kv_lora_rank")) return;
  m.kv_lora_rank = c.positive_int("kv_lora_rank");
  m.q_lora_rank = c.int_at_least_or("q_lora_rank", 0, 0);
  m.qk_nope_head_dim = c.positive_int("qk_nope_head_dim");
  m.qk_rope_head_dim = c.positive_int("qk_rope_head_dim");
  m.v_head_dim = c.positive_int("v_head_dim");
  m.kv_heads = m.heads;
}

/// Sliding-window attention: which layers, and the window (see parse_model_json).
void read_sliding_window(const detail::JsonCursor& c, ModelSpec& m) {
  std::int64_t sliding = 0;
  if (c.has("layer_types") && c.node().at("layer_types").is_array()) {
    const auto& types = c.node().at("layer_types");
    if (static_cast<std::int64_t>(types.size()) != m.layers)
      c.fail("layer_types", fmt::format("one entry per layer ({})", m.layers));
    for (const auto& t : types) {
      if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
        c.fail("layer_types", "entries \"sliding_attention\" or \"full_attention\"");
      sliding += t == "sliding_attention" ? 1 : 0;
    }
  } else if (has_value(c, "sliding_window") && c.boolean_or("use_sliding_window", true)) {
    sliding = m.layers;                                                    // Mistral: every layer
    if (c.has("use_sliding_window") && has_value(c, "max_window_layers"))  // Qwen2
      sliding = std::max<std::int64_t>(0, m.layers - c.int_at_least_or("max_window_layers", 0, 0));
    else if (has_value(c, "sliding_window_pattern"))  // Gemma 3: every n-th layer is full
      sliding = m.layers - m.layers / c.positive_int("sliding_window_pattern");
    else if (const std::string t = c.opt_string("model_type").value_or("");
             t == "gemma2" || t == "gpt_oss")  // their configs' default: even layers slide
      sliding = (m.layers + 1) / 2;
  }
  if (sliding == 0) return;
  m.sliding_layers = sliding;
  m.sliding_window = c.positive_int("sliding_window");
}

/// Llama / Mistral / Mixtral / Qwen / DeepSeek keys.
void read_llama_keys(const detail::JsonCursor& c, const std::string& source,
                     const std::optional<std::string>& outer_name, ModelSpec& m) {
  m.name = c.opt_string("name").value_or(
      outer_name.value_or(name_from_path(source, c.opt_string("model_type").value_or("model"))));
  m.hidden = c.positive_int("hidden_size");
  m.layers = c.positive_int("num_hidden_layers");
  m.heads = c.positive_int("num_attention_heads");
  m.kv_heads = c.int_at_least_or("num_key_value_heads", 1, m.heads);
  if (has_value(c, "head_dim")) {
    m.head_dim = c.positive_int("head_dim");
  } else {
    if (m.hidden % m.heads != 0)
      c.fail("num_attention_heads", fmt::format("a divisor of hidden_size ({})", m.hidden));
    m.head_dim = m.hidden / m.heads;
  }
  m.ffn = c.positive_int("intermediate_size");
  m.vocab = c.positive_int("vocab_size");
  m.tied_embeddings = c.boolean_or("tie_word_embeddings", false);
  read_moe_keys(c, m);
  read_mla_keys(c, m);
  read_sliding_window(c, m);
  std::string act = c.opt_string("hidden_act").value_or("silu");
  m.gated_mlp = act == "silu" || act == "swiglu" || act == "gelu_pytorch_tanh";
  m.biases = false;  // attention_bias (Qwen) adds ~0.01% of parameters: not counted
  m.layernorm_bias = false;
  m.dropout = c.number_in_or("hidden_dropout", 0, 1, 0) > 0;
  m.mtp_layers = c.int_at_least_or("num_nextn_predict_layers", 0, 0);
}

}  // namespace

ModelSpec parse_model_json(const std::string& text, const std::string& source) {
  auto doc = detail::parse_json(text, source);
  detail::JsonCursor c(doc, source);
  // Multimodal configs (Llama 4, Gemma 3, Mistral 3, ...) nest the language model.
  const bool nested = !c.has("hidden_size") && !c.has("n_embd") && c.has("text_config") &&
                      doc.at("text_config").is_object();
  const std::optional<std::string> outer_name = c.opt_string("name");
  if (nested) c = c.at("text_config");
  ModelSpec m;
  m.source = c.opt_string("source").value_or("");
  if (c.has("n_embd")) {
    read_gpt2_keys(c, source, m);
  } else if (c.has("hidden_size")) {
    read_llama_keys(c, source, outer_name, m);
  } else {
    c.fail_here(
        "expected a Hugging Face config.json with hidden_size (Llama family) or n_embd "
        "(GPT-2 family)");
  }
  const bool gpt2_keys = c.has("n_embd");
  validate(m, source, [&](std::string_view key) {
    static const std::pair<std::string_view, std::string_view> kGpt2[] = {
        {"hidden_size", "n_embd"},
        {"num_hidden_layers", "n_layer"},
        {"num_attention_heads", "n_head"},
        {"num_key_value_heads", "n_head"},
        {"intermediate_size", "n_inner"}};
    if (gpt2_keys)
      for (const auto& [llama, gpt2] : kGpt2)
        if (key == llama) return c.path_of(gpt2);
    return c.path_of(key);
  });
  return m;
}

}  // namespace topoplan
