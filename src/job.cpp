#include "topoplan/job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

#include "detail/names.hpp"
#include "topoplan/error.hpp"
#include "topoplan/model.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::bf16:
    case Dtype::fp16: return 2.0;
    case Dtype::fp8: return 1.0;
    case Dtype::nvfp4: return kNvfp4BytesPerElement;
    case Dtype::mxfp8: return kMxfp8BytesPerElement;
  }
  return 2.0;
}

bool low_precision_linear(Dtype d) {
  return d == Dtype::fp8 || d == Dtype::nvfp4 || d == Dtype::mxfp8;
}

bool fp8_multiplies(Dtype d) { return d == Dtype::fp8 || d == Dtype::mxfp8; }

bool low_precision_param_gather(const JobSpec& j) {
  return (j.fp8_param_gather && fp8_multiplies(j.dtype)) ||
         (j.fp4_param_gather && j.dtype == Dtype::nvfp4);
}

bool mxfp8_params_gathered_in_bf16(const JobSpec& j) {
  return j.dtype == Dtype::mxfp8 && low_precision_param_gather(j);
}

double activation_bytes(const JobSpec& j) {
  return low_precision_linear(j.dtype) ? 2.0 : dtype_bytes(j.dtype);
}

namespace {
constexpr std::array<const char*, 5> kDtypeNames{"bf16", "fp16", "fp8", "nvfp4", "mxfp8"};
constexpr std::array<const char*, 2> kDispatcherNames{"alltoall", "flex"};
constexpr std::array<const char*, 2> kCpCommNames{"p2p", "all_gather"};
}  // namespace

const char* to_string(CpComm c) { return detail::name_of(kCpCommNames, c); }

CpComm parse_cp_comm(const std::string& s, const std::string& what) {
  if (auto c = detail::from_name<CpComm>(kCpCommNames, s)) return *c;
  throw_input(
      what, "",
      fmt::format("expected {} (Megatron-core's a2a and a2a+p2p are not modelled), got '{}'",
                  detail::names_list(kCpCommNames), s));
}

const char* to_string(MoeDispatcher d) { return detail::name_of(kDispatcherNames, d); }

MoeDispatcher parse_moe_dispatcher(const std::string& s, const std::string& what) {
  if (auto d = detail::from_name<MoeDispatcher>(kDispatcherNames, s)) return *d;
  throw_input(what, "",
              fmt::format("expected {}, got '{}'", detail::names_list(kDispatcherNames), s));
}

namespace {

constexpr std::pair<unsigned, const char*> kRecomputeModuleNames[] = {
    {kRecomputeLayernorm, "layernorm"},
    {kRecomputeMlaUpProj, "mla_up_proj"},
    {kRecomputeMoeAct, "moe_act"}};

}  // namespace

unsigned recompute_module_bit(const std::string& name) {
  for (const auto& [b, n] : kRecomputeModuleNames)
    if (name == n) return b;
  return 0;
}

unsigned parse_recompute_modules(const std::string& s, const std::string& what) {
  unsigned out = 0;
  if (s.empty() || s == "none") return out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = std::min(s.find(',', start), s.size());
    const unsigned bit = recompute_module_bit(s.substr(start, comma - start));
    if (bit == 0)
      throw_input(what, "",
                  fmt::format("expected layernorm, mla_up_proj or moe_act, comma-separated, got "
                              "'{}'",
                              s));
    out |= bit;
    start = comma + 1;
  }
  return out;
}

std::string recompute_modules_string(unsigned modules) {
  std::string out;
  for (const auto& [b, n] : kRecomputeModuleNames) {
    if (!(modules & b)) continue;
    if (!out.empty()) out += ',';
    out += n;  // appended in place: GCC 12's -Wrestrict misfires on a concatenated temporary
  }
  return out.empty() ? "none" : out;
}

unsigned recomputed_modules(const JobSpec& j, const Plan& p) {
  return p.recompute == Recompute::full ? 0u : j.recompute_modules | own_recompute_modules(p);
}

const char* to_string(Dtype d) { return detail::name_of(kDtypeNames, d); }

Dtype parse_dtype(const std::string& s, const std::string& what) {
  if (auto d = detail::from_name<Dtype>(kDtypeNames, s)) return *d;
  throw_input(what, "", fmt::format("expected {}, got '{}'", detail::names_list(kDtypeNames), s));
}

void validate(const JobSpec& j) {
  constexpr std::int64_t kMax = kMaxJobCount;
  if (j.seq_len < 1 || j.seq_len > kMax)
    throw_input("seq_len", "",
                fmt::format("expected a positive integer up to {}, got {}", kMax, j.seq_len));
  if (j.global_batch < 1 || j.global_batch > kMax)
    throw_input("global_batch", "",
                fmt::format("expected a positive integer up to {}, got {}", kMax, j.global_batch));
  if (j.dp_bucket_params < 0 || j.dp_bucket_params > kMaxDpBucketParams)
    throw_input("dp_bucket_params", "",
                fmt::format("expected a positive number of parameters up to {} (0: the default), "
                            "got {}",
                            kMaxDpBucketParams, j.dp_bucket_params));
}

void apply_mtp_layers(ModelSpec& m, JobSpec& j, const std::string& what) {
  if (j.mtp_layers < -1 || j.mtp_layers > kMaxMtpLayers)
    throw_input(what, "",
                fmt::format("expected a whole number of multi-token-prediction modules from 0 to "
                            "{}, got {}",
                            kMaxMtpLayers, j.mtp_layers));
  if (j.mtp_layers >= 0) m.mtp_layers = j.mtp_layers;
  j.mtp_layers = static_cast<int>(m.mtp_layers);
}

double format_peak_flops(const GpuSpec& gpu, Dtype d) {
  if (fp8_multiplies(d) && gpu.peak_flops_fp8 > 0) return gpu.peak_flops_fp8;
  if (d == Dtype::nvfp4 && gpu.peak_flops_fp4 > 0) return gpu.peak_flops_fp4;
  return gpu.peak_flops;
}

const char* format_peak_name(Dtype d) {
  return fp8_multiplies(d) ? "FP8" : d == Dtype::nvfp4 ? "FP4" : "16-bit";
}

bool fp8_attention_possible(const JobSpec& j, const GpuSpec& gpu) {
  return low_precision_linear(j.dtype) && gpu.peak_flops_fp8 > 0;
}

void validate(const JobSpec& j, const GpuSpec& gpu) {
  if (j.dtype == Dtype::fp8 && !(gpu.peak_flops_fp8 > 0))
    throw_input(
        "dtype", "",
        fmt::format("fp8 training needs FP8 tensor cores; {} has none (fp8_TFLOPs)", gpu.name));
  if (j.dtype == Dtype::nvfp4 && !(gpu.peak_flops_fp4 > 0))
    throw_input(
        "dtype", "",
        fmt::format("nvfp4 training needs FP4 tensor cores; {} has none (fp4_TFLOPs)", gpu.name));
  if (j.dtype == Dtype::mxfp8 && !(gpu.peak_flops_fp8 > 0 && gpu.arch >= Arch::blackwell))
    throw_input("dtype", "",
                fmt::format("mxfp8 training needs block-scaled FP8 tensor cores (a Blackwell GPU "
                            "with fp8_TFLOPs); {} is {}",
                            gpu.name, to_string(gpu.arch)));
  if (j.fp8_attention && !fp8_attention_possible(j, gpu))
    throw_input("fp8_attention", "",
                fmt::format("expected fp8, mxfp8 or nvfp4 training on FP8 tensor cores, got {} "
                            "on {}",
                            to_string(j.dtype), gpu.name));
  if (j.fp8_attention && (j.fa2_attention || !j.flash_attention))
    throw_input("fp8_attention", "",
                fmt::format("expected fused attention (Transformer Engine's cuDNN kernels), got {}",
                            j.fa2_attention ? "FlashAttention-2" : "unfused attention"));
}

}  // namespace topoplan
