#pragma once
/// What is being trained: sequence length, batch, precision, and the memory-saving choices.
#include <cstdint>
#include <string>

namespace topoplan {

enum class Dtype { bf16, fp16 };
enum class Recompute { none, selective, full };

struct JobSpec {
  std::int64_t seq_len = 4096;       ///< tokens per sequence
  std::int64_t global_batch = 512;   ///< sequences per optimizer step
  Dtype dtype = Dtype::bf16;
  int zero_stage = 1;                ///< 0: none; 1: distributed optimizer; 2: + gradients; 3: + weights
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;    ///< Megatron sequence parallelism with TP
  bool flash_attention = true;       ///< attention scores are never stored (no s^2 activations)
};

[[nodiscard]] double dtype_bytes(Dtype d);
[[nodiscard]] const char* to_string(Dtype d);
[[nodiscard]] const char* to_string(Recompute r);
/// Parsers for flag values; InputError names `what` (the flag) on a bad value.
[[nodiscard]] Dtype parse_dtype(const std::string& s, const std::string& what);
[[nodiscard]] Recompute parse_recompute(const std::string& s, const std::string& what);
/// Checks ranges; InputError names the flag.
void validate(const JobSpec& j);

}  // namespace topoplan
