#include "topoplan/fingerprint.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>

namespace topoplan {
namespace {

std::string fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

}  // namespace

std::string fingerprint(const Cluster& c) {
  const auto& s = c.spec();
  std::string t = fmt::format("gpu {:.17g} {:.17g} {:.17g};nodes {};nics {} {:.17g}",
                              s.gpu.peak_flops, s.gpu.memory_bytes, s.gpu.hbm_bandwidth, s.nodes,
                              s.nics_per_server, s.nic_bandwidth);
  for (const auto& tier : s.tiers)
    t += fmt::format(";tier {} {:.17g} {:.17g} {:.17g}{}{}", tier.fanout, tier.bandwidth,
                     tier.latency, tier.oversubscription, tier.rails ? " rails" : "",
                     tier.in_network_reduction ? " sharp" : "");
  for (const auto& g : s.server_groups)
    t += fmt::format(";servers {} {:.17g} {:.17g} {:.17g} {} {}", g.count, g.gpu.peak_flops,
                     g.gpu.memory_bytes, g.gpu.hbm_bandwidth, static_cast<int>(g.gpu.arch), g.gpus);
  // GPUs down only when some are, so regular clusters keep their fingerprints.
  if (!s.down.empty()) t += ";down " + fmt::format("{}", fmt::join(s.down, ","));
  return fnv1a(t);
}

std::string fingerprint(const Model& m) {
  const auto& s = m.spec;
  std::string t = fmt::format("{} {} {} {} {} {} {} {} {} {} {} {}", s.hidden, s.layers, s.heads,
                              s.kv_heads, s.head_dim, s.ffn, s.vocab, s.positions, s.gated_mlp,
                              s.tied_embeddings, s.biases, s.layernorm_bias);
  // Experts and latent attention only when present, so dense models keep their fingerprints.
  if (s.moe())
    t += fmt::format(";moe {} {} {} {} {} {}", s.experts, s.top_k, s.expert_ffn, s.shared_experts,
                     s.shared_ffn(), s.first_dense_layers);
  if (s.mla())
    t += fmt::format(";mla {} {} {} {} {}", s.q_lora_rank, s.kv_lora_rank, s.qk_nope_head_dim,
                     s.qk_rope_head_dim, s.v_head_dim);
  // Not mtp_layers: the deepseek-v3 preset gained its MTP module in session 29 after rank files
  // had been written for it, and those must still read back (MTP moves no rank).
  return fnv1a(t);
}

// Not overlap_param_gather: the default stack turned it on after rank files had been written,
// and those files must still read back (a rank file records the job's own JSON besides).
std::string fingerprint(const JobSpec& j) {
  return fnv1a(fmt::format("{} {} {} {} {} {} {}", j.seq_len, j.global_batch, to_string(j.dtype),
                           j.flash_attention, j.tp_comm_overlap, j.overlap_grad_reduce,
                           j.overlap_p2p)) +
         (j.ep_comm_overlap ? "-ep-overlap" : "") + (j.grad_reduce_bf16 ? "-grad-bf16" : "") +
         (j.grad_accumulation_pass ? "-grad-accum-pass" : "") + (j.fa2_attention ? "-fa2" : "") +
         (j.eager ? "-eager" : "") + (j.fp8_tp_all_gather ? "-fp8-ag" : "") +
         (j.fp8_attention ? "-fp8-attention" : "") + (j.fp8_param_gather ? "-fp8-params" : "") +
         (j.fp4_param_gather ? "-fp4-params" : "") + (j.cuda_graphs ? "-cuda-graphs" : "") +
         (j.moe_dispatcher == MoeDispatcher::flex ? "-flex-dispatch" : "") +
         (j.recompute_modules ? "-recompute-" + recompute_modules_string(j.recompute_modules)
                              : "") +
         (j.cp_comm == CpComm::all_gather ? "-cp-all-gather" : "");
}

}  // namespace topoplan
