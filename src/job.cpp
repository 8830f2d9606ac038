#include "topoplan/job.hpp"

#include <fmt/format.h>

#include "topoplan/error.hpp"

namespace topoplan {

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::bf16:
    case Dtype::fp16: return 2.0;
  }
  return 2.0;
}

const char* to_string(Dtype d) { return d == Dtype::bf16 ? "bf16" : "fp16"; }

Dtype parse_dtype(const std::string& s, const std::string& what) {
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp16") return Dtype::fp16;
  throw_input(what, "", fmt::format("expected bf16 or fp16, got '{}'", s));
}

void validate(const JobSpec& j) {
  if (j.seq_len < 1) throw_input("--seq-len", "", fmt::format("expected a positive integer, got {}", j.seq_len));
  if (j.global_batch < 1)
    throw_input("--global-batch", "", fmt::format("expected a positive integer, got {}", j.global_batch));
}

}  // namespace topoplan
