#include "topoplan/model.hpp"

#include <filesystem>
#include <fmt/format.h>

#include "detail/json_input.hpp"
#include "topoplan/error.hpp"

namespace topoplan {

void validate(const ModelSpec& m, const std::string& source) {
  auto need = [&](std::int64_t v, const char* field) {
    if (v <= 0) throw_input(source, field, fmt::format("expected a positive integer, got {}", v));
  };
  need(m.hidden, "hidden_size");
  need(m.layers, "num_hidden_layers");
  need(m.heads, "num_attention_heads");
  need(m.kv_heads, "num_key_value_heads");
  need(m.head_dim, "head_dim");
  need(m.ffn, "intermediate_size");
  need(m.vocab, "vocab_size");
  if (m.heads % m.kv_heads != 0)
    throw_input(source, "num_key_value_heads",
                fmt::format("expected a divisor of num_attention_heads ({}), got {}", m.heads,
                            m.kv_heads));
}

ModelCounts count(const ModelSpec& m) {
  ModelCounts c;
  const std::int64_t h = m.hidden;
  const std::int64_t q = m.heads * m.head_dim;
  const std::int64_t kv = m.kv_heads * m.head_dim;
  const std::int64_t attn = h * q + 2 * h * kv + q * h;             // Q, K, V, output
  const std::int64_t mlp = (m.gated_mlp ? 3 : 2) * h * m.ffn;        // up (+gate), down
  const std::int64_t bias = m.biases ? (q + 2 * kv) + h + m.ffn * (m.gated_mlp ? 2 : 1) + h : 0;
  const std::int64_t norms = 2 * h * (m.layernorm_bias ? 2 : 1);
  c.layer_params = attn + mlp + bias + norms;
  c.embedding_params = m.vocab * h + m.positions * h;
  c.head_params = (m.tied_embeddings ? 0 : m.vocab * h) + h * (m.layernorm_bias ? 2 : 1);
  c.total_params = m.layers * c.layer_params + c.embedding_params + c.head_params;
  c.q_dim = static_cast<double>(q);
  c.kv_dim = static_cast<double>(kv);
  c.layer_matmul_flops = 2.0 * static_cast<double>(attn + mlp);
  c.layer_attention_flops_per_seq = 4.0 * static_cast<double>(q);  // QK^T and AV
  c.logits_flops = 2.0 * static_cast<double>(m.vocab * h);
  return c;
}

double model_flops_per_token(const ModelCounts& c, std::int64_t layers, double s) {
  double fwd = static_cast<double>(layers) *
                   (c.layer_matmul_flops + c.layer_attention_flops_per_seq * s) +
               c.logits_flops;
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

ModelSpec parse_model_json(const std::string& text, const std::string& source) {
  auto doc = detail::parse_json(text, source);
  detail::JsonCursor c(doc, source);
  ModelSpec m;
  m.source = c.opt_string("source").value_or("");
  if (c.has("n_embd")) {  // GPT-2 family
    m.name = c.opt_string("name").value_or(name_from_path(source, "gpt2"));
    m.hidden = c.positive_int("n_embd");
    m.layers = c.positive_int("n_layer");
    m.heads = c.positive_int("n_head");
    m.kv_heads = m.heads;
    if (m.hidden % m.heads != 0)
      c.fail("n_head", fmt::format("a divisor of n_embd ({})", m.hidden));
    m.head_dim = m.hidden / m.heads;
    m.ffn = (c.has("n_inner") && !c.node().at("n_inner").is_null())
                ? c.positive_int("n_inner")
                : 4 * m.hidden;
    m.vocab = c.positive_int("vocab_size");
    m.positions = c.int_at_least_or("n_positions", 0, 1024);
    m.tied_embeddings = c.boolean_or("tie_word_embeddings", true);
    m.biases = true;
    m.layernorm_bias = true;
    m.gated_mlp = false;
  } else if (c.has("hidden_size")) {  // Llama / Mistral / Mixtral / Qwen family
    m.name = c.opt_string("name").value_or(
        name_from_path(source, c.opt_string("model_type").value_or("model")));
    m.hidden = c.positive_int("hidden_size");
    m.layers = c.positive_int("num_hidden_layers");
    m.heads = c.positive_int("num_attention_heads");
    m.kv_heads = c.int_at_least_or("num_key_value_heads", 1, m.heads);
    if (c.has("head_dim") && !c.node().at("head_dim").is_null()) {
      m.head_dim = c.positive_int("head_dim");
    } else {
      if (m.hidden % m.heads != 0)
        c.fail("num_attention_heads", fmt::format("a divisor of hidden_size ({})", m.hidden));
      m.head_dim = m.hidden / m.heads;
    }
    m.ffn = c.positive_int("intermediate_size");
    m.vocab = c.positive_int("vocab_size");
    m.tied_embeddings = c.boolean_or("tie_word_embeddings", false);
    std::string act = c.opt_string("hidden_act").value_or("silu");
    m.gated_mlp = act == "silu" || act == "swiglu" || act == "gelu_pytorch_tanh";
    m.biases = false;  // attention_bias (Qwen) adds ~0.01% of parameters: not counted
    m.layernorm_bias = false;
  } else {
    c.fail_here("expected a Hugging Face config.json with hidden_size (Llama family) or n_embd "
                "(GPT-2 family)");
  }
  if (m.heads % m.kv_heads != 0)
    c.fail("num_key_value_heads", fmt::format("a divisor of num_attention_heads ({})", m.heads));
  validate(m, source);
  return m;
}

}  // namespace topoplan
