#pragma once
/// A transformer's shape, read from a Hugging Face config.json (Llama-family or GPT-2 keys),
/// and the parameter and FLOP counts derived from it by counting every matrix multiply.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace topoplan {

struct ModelSpec {
  std::string name;
  std::string source;            ///< citation / provenance
  std::int64_t hidden = 0;       ///< h
  std::int64_t layers = 0;       ///< l
  std::int64_t heads = 0;        ///< a, query heads
  std::int64_t kv_heads = 0;     ///< key/value heads (GQA); = heads for MHA
  std::int64_t head_dim = 0;     ///< default hidden / heads
  std::int64_t ffn = 0;          ///< MLP inner size
  std::int64_t vocab = 0;        ///< V
  std::int64_t positions = 0;    ///< learned position embeddings (GPT), 0 for rotary
  bool gated_mlp = false;        ///< SwiGLU: three h x ffn matrices instead of two
  bool tied_embeddings = false;  ///< output layer shares the input embedding
  bool biases = false;           ///< linear layers carry biases (GPT)
  bool layernorm_bias = false;   ///< LayerNorm (weight + bias) rather than RMSNorm (weight)
  /// Dropout after attention and the MLP (1-byte masks stored per element): GPT-2-style configs
  /// (resid_pdrop, default 0.1); off for the Llama family unless hidden_dropout > 0.
  bool dropout = false;
  // Mixture of experts (experts = 0: dense). MoE layers replace the MLP with `experts` routed
  // experts of size expert_ffn (each token uses top_k) plus `shared_experts` always-on ones.
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t expert_ffn = 0;
  std::int64_t shared_experts = 0;
  std::int64_t shared_expert_ffn = 0;   ///< size of each shared expert; 0: expert_ffn
  std::int64_t first_dense_layers = 0;  ///< leading layers that keep a dense MLP of size ffn
  // Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank = 0: standard attention).
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  // Sliding-window attention (Mistral, Gemma 2/3, gpt-oss): `sliding_layers` of the layers let a
  // token attend to the `sliding_window` tokens before it only (0: every layer attends fully).
  std::int64_t sliding_window = 0;
  std::int64_t sliding_layers = 0;
  /// Multi-token prediction (DeepSeek-V3's num_nextn_predict_layers, Megatron-LM's
  /// --mtp-num-layers): modules after the last layer, each a projection of [hidden; embedding]
  /// (2h x h), one more transformer layer of the last layer's kind and the shared output head.
  /// Trained with the model, on the last pipeline stage; not used when serving.
  std::int64_t mtp_layers = 0;
  [[nodiscard]] bool moe() const { return experts > 0; }
  [[nodiscard]] std::int64_t shared_ffn() const {
    return shared_expert_ffn > 0 ? shared_expert_ffn : expert_ffn;
  }
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
};

/// Counts derived once from a spec. Parameters are elements; FLOPs are per token.
struct ModelCounts {
  std::int64_t layer_params = 0;  ///< one transformer layer (average over dense and MoE layers)
  std::int64_t layer_expert_params = 0;  ///< of which routed experts (average per layer)
  std::int64_t moe_layers = 0;           ///< layers with routed experts
  std::int64_t embedding_params = 0;     ///< token (+ position) embeddings
  std::int64_t head_params = 0;          ///< output layer (0 when tied) + final norm
  std::int64_t total_params = 0;
  double q_dim = 0;  ///< heads x head_dim
  /// MLP width a token activates, averaged over layers: ffn for dense layers, (top_k + shared)
  /// x expert_ffn for MoE layers. Sizes activations and element-wise traffic.
  double active_ffn = 0;
  /// The MLP width a token activates in an MoE layer: top_k routed experts and the shared ones
  /// (0 for dense models).
  double moe_ffn = 0;
  /// The smallest MLP matrix dimension (expert_ffn for MoE models): sizes GEMM efficiency.
  double min_ffn = 0;
  double kv_dim = 0;  ///< kv_heads x head_dim
  /// Forward FLOPs per token in one layer's weight matmuls (2 per multiply-add).
  double layer_matmul_flops = 0;
  /// Forward FLOPs per token per layer of attention scores and weighted values, per unit of
  /// sequence length: multiply by s (no causal halving, as Megatron-LM counts).
  double layer_attention_flops_per_seq = 0;
  /// Forward FLOPs per token of the logits.
  double logits_flops = 0;
  /// KV cache elements per token per layer (compressed latent for MLA), and whether tensor
  /// parallelism splits it (by KV head) or every TP rank holds all of it (MLA).
  double kv_cache_elems = 0;
  bool kv_cache_split = true;
  /// Parameters a token uses: all but the routed experts it is not sent to (embeddings and
  /// routers included, as Mixtral's 12.9B and DeepSeek-V3's 37B count them).
  std::int64_t active_params = 0;
  /// Sliding-window attention: the share of layers with a window, and the window (tokens).
  double sliding_fraction = 0;
  double sliding_window = 0;
  /// Multi-token prediction, all modules together (0 without): their count, their parameters
  /// (the routed experts apart), and their forward FLOPs per token in weight matmuls (layer,
  /// projection and logits; the attention scores are layer_attention_flops_per_seq per module).
  double mtp_layers = 0;
  std::int64_t mtp_params = 0;
  std::int64_t mtp_expert_params = 0;
  double mtp_matmul_flops = 0;
  /// Forward FLOPs per token per layer of MLA's up-projections (queries from their latent, keys
  /// and values from theirs): what recomputing them runs again. 0 without MLA.
  double mla_up_flops = 0;
};

/// Physical ranges checked by validate(): widths (hidden size, heads, head sizes, experts,
/// ranks), MLP and vocabulary sizes, layers, and the parameter count (10^15: a quadrillion,
/// 100x the largest model anyone has described), so that no count can overflow.
inline constexpr std::int64_t kMaxModelWidth = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxModelFfn = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxModelLayers = 16384;
/// Multi-token prediction modules (DeepSeek-V3 trains with 1).
inline constexpr std::int64_t kMaxMtpLayers = 16;
inline constexpr double kMaxModelParams = 1e15;

/// Validates a spec; InputError names `source` and the field by its Hugging Face (Llama-family)
/// key, or by what `key_path` maps that key to (the file's own key and JSON path).
void validate(const ModelSpec& m, const std::string& source,
              const std::function<std::string(std::string_view)>& key_path = {});
[[nodiscard]] ModelCounts count(const ModelSpec& m);
/// Model FLOPs (no recomputation) per token, forward + backward, for sequence length s.
[[nodiscard]] double model_flops_per_token(const ModelCounts& c, std::int64_t layers, double s);

/// The keys a query attends to in a causal sequence of `s` tokens, averaged over its positions
/// and the layers, as a fraction of full causal attention's: 1 without sliding-window layers; a
/// sliding layer attends to min(position, window) keys. Scales attention FLOPs.
[[nodiscard]] double attention_span_factor(const ModelCounts& c, double s);
/// The same for one query after `context` tokens (decoding): a sliding layer attends to, and
/// caches, min(context, window) of them. Scales decode attention and the KV cache.
[[nodiscard]] double attention_span_factor_at(const ModelCounts& c, double context);

/// Writes a spec as a Hugging Face-style config.json that parse_model_json reads back to the same
/// spec (GPT-2 keys for learned positions and biases, Llama keys otherwise): a plan carries its
/// model this way.
[[nodiscard]] std::string model_config_json(const ModelSpec& m);
/// Parses a Hugging Face config.json (Llama/Mistral/Qwen keys, Mixtral, Qwen2/3-MoE, DeepSeek
/// MoE and MLA, or GPT-2 keys); a multimodal config's language model under `text_config`.
/// Sliding windows: `layer_types` ("sliding_attention" / "full_attention", gpt-oss, Gemma 3)
/// with `sliding_window`; else `sliding_window` on every layer (Mistral) unless
/// `use_sliding_window` is false (Qwen2; with it true, the layers from `max_window_layers` on),
/// every `sliding_window_pattern`-th layer full (Gemma 3), every other layer (model_type gemma2
/// or gpt_oss without layer_types).
[[nodiscard]] ModelSpec parse_model_json(const std::string& text, const std::string& source);

}  // namespace topoplan

namespace topoplan {

/// A validated spec with its counts, computed once.
struct Model {
  ModelSpec spec;
  ModelCounts counts;
  explicit Model(ModelSpec s, const std::string& source = "model")
      : spec((validate(s, source), std::move(s))), counts(count(spec)) {}
};

}  // namespace topoplan
