#pragma once
/// Inference: prefill is compute-bound; decode reads every weight byte on the GPU and the KV cache
/// once per generated token, and pays every layer's TP all-reduces for every token.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topoplan/cost_model.hpp"

namespace topoplan {

/// The serving runtime, for its fixed per-layer and per-collective decode costs (kernel launches,
/// synchronisation, the server around the engine): TensorRT-LLM (the default), FasterTransformer
/// (2022) run directly, and FasterTransformer behind Triton Inference Server.
enum class Runtime { tensorrt_llm, fastertransformer, fastertransformer_triton };
inline constexpr int kRuntimes = 3;
[[nodiscard]] Runtime parse_runtime(const std::string& s, const std::string& what);
/// A serving run's weight or KV cache format: bf16, fp16 or fp8 (nvfp4 is a training format
/// here: FP4 serving's kernels are not modelled; an InputError naming `what`).
[[nodiscard]] Dtype parse_serving_dtype(const std::string& s, const std::string& what);
[[nodiscard]] const char* to_string(Runtime r);
/// Whether the runtime has a one-shot all-reduce kernel beside NCCL's (TensorRT-LLM's custom
/// all-reduce; FasterTransformer's is off unless enabled, so it runs NCCL's).
[[nodiscard]] bool has_one_shot_all_reduce(Runtime r);

struct InferenceJob {
  std::int64_t prompt_len = 1024;  ///< tokens in
  std::int64_t output_len = 256;   ///< tokens generated
  std::int64_t batch = 1;          ///< concurrent sequences per replica
  Dtype weight_dtype = Dtype::bf16;
  Dtype kv_dtype = Dtype::bf16;
  Runtime runtime = Runtime::tensorrt_llm;
};

enum class Objective { latency, throughput };
[[nodiscard]] Objective parse_objective(const std::string& s, const std::string& what);
[[nodiscard]] const char* to_string(Objective o);

/// Seconds per generated token, for one sequence; they add up to token_latency.
struct DecodeBreakdown {
  double memory = 0;    ///< weights and KV cache read from HBM (or compute, if that is longer)
  double overhead = 0;  ///< per-layer kernel launches and synchronisation
  double tp = 0;        ///< TP all-reduces: 2 per layer
  double pp = 0;        ///< stage-to-stage hops
  double ep = 0;        ///< MoE all-to-alls: dispatch and combine per MoE layer
  [[nodiscard]] double total() const { return memory + overhead + tp + pp + ep; }
};

/// Seconds to the first token; they add up to ttft.
struct PrefillBreakdown {
  double compute = 0;
  double overhead = 0;
  double tp = 0;
  double pp = 0;
  double ep = 0;
  [[nodiscard]] double total() const { return compute + overhead + tp + pp + ep; }
};

struct InferenceEval {
  bool fits = false;
  int replicas = 0;
  double ttft = 0;           ///< seconds
  double token_latency = 0;  ///< seconds per generated token, per sequence
  double end_to_end = 0;     ///< ttft + (output - 1) x token_latency
  double tokens_per_s = 0;   ///< generated tokens per second per replica (batch x output / e2e)
  double tokens_per_s_per_gpu = 0;
  double decode_tokens_per_s = 0;  ///< steady decode rate per replica: batch / token_latency
  double comm_share = 0;           ///< (tp + pp + ep) / token_latency
  double weight_read = 0;          ///< seconds per token reading weights (part of decode.memory)
  double kv_read = 0;              ///< seconds per token reading the KV cache
  PrefillBreakdown prefill;
  DecodeBreakdown decode;
  double memory_weights = 0, memory_kv = 0, memory_other = 0;  ///< bytes per GPU
  [[nodiscard]] double memory_total() const { return memory_weights + memory_kv + memory_other; }
  DimArray<GroupShape> shapes{};
  Algorithm tp_algorithm = Algorithm::none;
  Protocol tp_protocol = Protocol::none;  ///< NCCL's protocol when the all-reduce is ring or tree
};

/// TP must divide the heads and be a divisor or multiple of the KV heads; PP at most the layers;
/// tp x pp x replicas the GPUs.
[[nodiscard]] PlanError check_inference_plan(const Cluster& c, const Model& m, const Plan& p);
[[nodiscard]] InferenceEval evaluate_inference(const Cluster& c, const Model& m,
                                               const InferenceJob& j, const Plan& p,
                                               const Mapping& map, const Calibration& cal);

struct InferenceSearchOptions {
  DimArray<int> fixed{};  ///< 0: searched (tp, pp, dp, and ep for MoE models)
  std::optional<Order> order;
  Objective objective = Objective::latency;
  double max_token_latency = 0;  ///< seconds, 0: no bound
  double max_ttft = 0;           ///< seconds, 0: no bound
  int top_k = 10;
};

struct InferenceCandidate {
  Plan plan;
  InferenceEval eval;
};

struct InferenceSearchResult {
  std::vector<InferenceCandidate> top;
  std::int64_t evaluated = 0;
  std::int64_t out_of_memory = 0;
  std::int64_t over_bounds = 0;
};

/// Ranking: fits first; then by the objective (latency: token latency, then TTFT; throughput:
/// tokens/s per GPU), then smaller tp, pp, then the order as for training.
[[nodiscard]] bool inference_ranks_before(const InferenceCandidate& a, const InferenceCandidate& b,
                                          Objective o);
[[nodiscard]] InferenceSearchResult search_inference(const Cluster& c, const Model& m,
                                                     const InferenceJob& j, const Calibration& cal,
                                                     const InferenceSearchOptions& opt);

}  // namespace topoplan
