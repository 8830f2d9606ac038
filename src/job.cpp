#include "topoplan/job.hpp"

#include <fmt/format.h>

#include "topoplan/error.hpp"

namespace topoplan {

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::bf16:
    case Dtype::fp16: return 2.0;
    case Dtype::fp8: return 1.0;
  }
  return 2.0;
}

const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
  }
  return "?";
}

Dtype parse_dtype(const std::string& s, const std::string& what) {
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp16") return Dtype::fp16;
  if (s == "fp8") return Dtype::fp8;
  throw_input(what, "", fmt::format("expected bf16, fp16 or fp8, got '{}'", s));
}

void validate(const JobSpec& j) {
  if (j.dtype == Dtype::fp8)
    throw_input("--dtype", "", "fp8 is for --inference (weights and KV cache); train in bf16 or fp16");
  if (j.seq_len < 1) throw_input("--seq-len", "", fmt::format("expected a positive integer, got {}", j.seq_len));
  if (j.global_batch < 1)
    throw_input("--global-batch", "", fmt::format("expected a positive integer, got {}", j.global_batch));
}

}  // namespace topoplan
