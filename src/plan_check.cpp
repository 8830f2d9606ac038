// Which plans can run at all: the divisibility and layout rules, and their one-line messages.
#include "topoplan/plan_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topoplan/mapping.hpp"

namespace topoplan {

PlanError tp_rule(const ModelSpec& m, int tp, bool kv_replication) {
  if (m.heads % tp != 0) return PlanError::tp_heads;
  if (m.kv_heads % tp != 0 && !(kv_replication && tp % m.kv_heads == 0))
    return PlanError::tp_kv_heads;
  if (m.ffn % tp != 0 || (m.moe() && m.expert_ffn % tp != 0)) return PlanError::tp_ffn;
  return PlanError::none;
}

PlanError cp_rule(std::int64_t seq_len, int cp) {
  return cp > 1 && seq_len % (2 * cp) != 0 ? PlanError::cp_seq : PlanError::none;
}

PlanError expert_tp_rule(const ModelSpec& m, const Plan& p) {
  if (p.expert_tp == 0 || p.expert_tp == p[Dim::tp]) return PlanError::none;
  const bool ok = m.moe() && p.expert_tp > 0 && p[Dim::tp] % p.expert_tp == 0;
  return ok ? PlanError::none : PlanError::expert_tp;
}

PlanError ep_rule(const ModelSpec& m, int ep, std::int64_t ep_ranks) {
  if (ep <= 1) return PlanError::none;
  if (!m.moe()) return PlanError::ep_dense;
  if (m.experts % ep != 0) return PlanError::ep_experts;
  if (ep_ranks % ep != 0) return PlanError::ep_dp;
  return PlanError::none;
}

PlanError check_plan(const Cluster& c, const Model& m, const JobSpec& j, const Plan& p) {
  if (c.has_down_gpus()) {
    // Any size up to the usable GPUs (--gpus fixes it), each TP group inside one server.
    if (j.gpus > c.usable_count()) return PlanError::gpus;
    if (j.gpus > 0 && p.world() != j.gpus) return PlanError::world_mismatch;
    if (p.world() > c.tp_capacity(p[Dim::tp])) return PlanError::placement;
  } else {
    const std::int64_t target = j.gpus > 0 ? j.gpus : c.gpu_count();
    if (target > c.gpu_count()) return PlanError::gpus;
    if (p.world() != target) return PlanError::world_mismatch;
  }
  const int cp = p[Dim::cp], ep = p[Dim::ep];
  for (PlanError e :
       {tp_rule(m.spec, p[Dim::tp]), cp_rule(j.seq_len, cp), expert_tp_rule(m.spec, p),
        ep_rule(m.spec, ep, expert_ranks(p) / expert_tp_of(p))})
    if (e != PlanError::none) return e;
  if (ep > 1 && expert_pp_mismatch(p)) return PlanError::ep_order;
  if (p.vpp < 1 || (p.vpp > 1 && p[Dim::pp] < 2) || !plan_split(p, m.spec.layers))
    return PlanError::pp_layers;
  if (p.zero < 0 || p.zero > 3) return PlanError::zero_stage;
  // Megatron-LM's block method recomputes --recompute-num-layers in each model chunk.
  if (p.recompute == Recompute::full && p.recompute_layers > 0 && p.recompute_layers % p.vpp != 0)
    return PlanError::recompute_layers;
  if (p.micro_batch < 1 ||
      j.global_batch % (static_cast<std::int64_t>(p[Dim::dp]) * p.micro_batch) != 0)
    return PlanError::batch;
  if (p.vpp > 1 &&
      (j.global_batch / (static_cast<std::int64_t>(p[Dim::dp]) * p.micro_batch)) % p[Dim::pp] != 0)
    return PlanError::vpp_microbatches;
  return offload_rule(c, m, p);
}

PlanError offload_rule(const Cluster& c, const Model& m, const Plan& p) {
  if (p.offload_layers == 0) return PlanError::none;
  const bool ok = p.offload_layers > 0 && p[Dim::pp] == 1 && p.recompute == Recompute::none &&
                  p.offload_layers < m.spec.layers && c.gpu().host_link_bandwidth > 0;
  return ok ? PlanError::none : PlanError::offload;
}

const char* short_reason(PlanError e) {
  switch (e) {
    case PlanError::none: return "ok";
    case PlanError::world_mismatch: return "degrees do not multiply to the GPU count";
    case PlanError::tp_heads: return "tp does not divide the attention heads";
    case PlanError::tp_kv_heads: return "tp does not divide the key/value heads";
    case PlanError::tp_ffn: return "tp does not divide the MLP size";
    case PlanError::pp_layers: return "no pipeline split fits the layers";
    case PlanError::vpp_microbatches: return "interleaving needs microbatches divisible by pp";
    case PlanError::batch: return "dp x micro-batch does not divide the global batch";
    case PlanError::unsupported_dim: return "dimension not modelled on this path";
    case PlanError::zero_stage: return "ZeRO stage outside 0-3";
    case PlanError::cp_seq: return "2 x cp does not divide the sequence";
    case PlanError::ep_dense: return "ep on a dense model";
    case PlanError::ep_experts: return "ep does not divide the experts";
    case PlanError::ep_dp: return "ep x expert tp does not divide tp x cp x dp";
    case PlanError::ep_order: return "order gives experts other pipeline groups";
    case PlanError::gpus: return "more GPUs than the cluster has";
    case PlanError::placement: return "TP groups do not fit whole on the usable GPUs";
    case PlanError::offload: return "activation offloading not possible";
    case PlanError::expert_tp: return "expert tp not a divisor of tp, or no experts";
    case PlanError::recompute_layers: return "recomputed layers not a multiple of vpp";
  }
  return "?";
}

namespace {

/// More GPUs than the cluster has, or than the TP groups fit whole around the ones down.
std::string describe_gpus(PlanError e, const Cluster& c, const JobSpec& j, const Plan& p) {
  if (e == PlanError::placement)
    return fmt::format(
        "tp/pp/dp: {} GPUs, but with {} GPUs down or absent, TP groups of {} fit whole in servers "
        "on only {} GPUs",
        p.world(), c.gpu_count() - c.usable_count(), p[Dim::tp], c.tp_capacity(p[Dim::tp]));
  if (c.has_down_gpus())
    return fmt::format("gpus: {} GPUs, but the cluster has {} usable ({} down or absent)", j.gpus,
                       c.usable_count(), c.gpu_count() - c.usable_count());
  return fmt::format("gpus: {} GPUs, but the cluster has {}", j.gpus, c.gpu_count());
}

/// Why no pipeline split fits: interleaving without pp, a given layout or first/last stage
/// count that does not add up, or layers that do not divide.
std::string describe_pp_layers(const Model& m, const Plan& p) {
  if (p.vpp > 1 && p[Dim::pp] < 2)
    return fmt::format("vpp: interleaving ({} model chunks per rank) needs pp >= 2, got pp {}",
                       p.vpp, p[Dim::pp]);
  if (!p.stage_layers.empty())
    return fmt::format(
        "stage_layers: expected {} counts (pp) of at least vpp {} layers{} adding up to {}'s "
        "{} layers, got {}",
        p[Dim::pp], p.vpp, p.flexible_layout || p.vpp == 1 ? "" : " (multiples of vpp)",
        m.spec.name, m.spec.layers, fmt::join(p.stage_layers, " "));
  if (sets_first_last_split(p))
    return fmt::format(
        "pp: {} layers on the first stage and {} on the last leave no equal "
        "share of {}'s {} layers for the other {} stages{}",
        p.first_stage_layers, p.last_stage_layers, m.spec.name, m.spec.layers, p[Dim::pp] - 2,
        p.vpp > 1 ? fmt::format(" in multiples of vpp {}", p.vpp) : "");
  if (p.vpp > 1 && p.flexible_layout)
    return fmt::format("vpp: {}'s {} layers over pp {} leave a stage fewer than vpp {} layers",
                       m.spec.name, m.spec.layers, p[Dim::pp], p.vpp);
  if (p.vpp > 1)
    return fmt::format(
        "vpp: no split of {}'s {} layers over pp {} gives every stage a "
        "multiple of vpp {} layers (this stack has no layout flag like Megatron-core's "
        "--pipeline-model-parallel-layout)",
        m.spec.name, m.spec.layers, p[Dim::pp], p.vpp);
  return fmt::format("pp: {} stages for {}'s {} layers", p[Dim::pp], m.spec.name, m.spec.layers);
}

/// The degrees' product against the GPUs planned.
std::string describe_world(const Cluster& c, const JobSpec& j, const Plan& p) {
  const int tp = p[Dim::tp];
  if (p[Dim::cp] > 1)
    return fmt::format("tp/cp/pp/dp: {} x {} x {} x {} = {} GPUs, but {} are planned", tp,
                       p[Dim::cp], p[Dim::pp], p[Dim::dp], p.world(),
                       j.gpus > 0 ? j.gpus : c.gpu_count());
  return fmt::format("tp/pp/dp: {} x {} x {} = {} GPUs, but {} {}", tp, p[Dim::pp], p[Dim::dp],
                     p.world(), j.gpus > 0 ? "gpus is" : "the cluster has",
                     j.gpus > 0 ? j.gpus : c.gpu_count());
}

/// Megatron-core's rules for --cpu-offloading-num-layers, and the host link it copies over.
std::string describe_offload(const Cluster& c, const Model& m, const Plan& p) {
  const std::string head = fmt::format("offload_layers: {}", p.offload_layers);
  if (p.offload_layers < 0) return head + " is negative";
  if (p[Dim::pp] > 1)
    return fmt::format(
        "{} needs pp 1 (Megatron-core offloads only without pipeline parallelism), "
        "got pp {}",
        head, p[Dim::pp]);
  if (p.recompute != Recompute::none)
    return fmt::format(
        "{} needs recompute none (Megatron-core offloads only without "
        "recomputation), got {}",
        head, to_string(p.recompute));
  if (p.offload_layers >= m.spec.layers)
    return fmt::format("{}: expected fewer than {}'s {} layers", head, m.spec.name, m.spec.layers);
  return fmt::format("{}: the {} has no host link (host_link_GBps in its GPU file)", head,
                     c.gpu().name);
}

}  // namespace

std::string describe(PlanError e, const Cluster& c, const Model& m, const JobSpec& j,
                     const Plan& p) {
  const int tp = p[Dim::tp];
  switch (e) {
    case PlanError::none: return "ok";
    case PlanError::world_mismatch: return describe_world(c, j, p);
    case PlanError::gpus:
    case PlanError::placement: return describe_gpus(e, c, j, p);
    case PlanError::tp_heads:
      return fmt::format("tp: {} does not divide {}'s {} attention heads", tp, m.spec.name,
                         m.spec.heads);
    case PlanError::tp_kv_heads:
      return fmt::format("tp: {} does not divide {}'s {} key/value heads", tp, m.spec.name,
                         m.spec.kv_heads);
    case PlanError::tp_ffn:
      return fmt::format("tp: {} does not divide {}'s MLP size {}", tp, m.spec.name, m.spec.ffn);
    case PlanError::pp_layers: return describe_pp_layers(m, p);
    case PlanError::vpp_microbatches:
      return fmt::format(
          "vpp: the interleaved schedule needs the {} microbatches per pipeline "
          "to be a multiple of pp {}",
          j.global_batch / (static_cast<std::int64_t>(p[Dim::dp]) * p.micro_batch), p[Dim::pp]);
    case PlanError::batch:
      return fmt::format("micro_batch: dp {} x micro-batch {} does not divide the global batch {}",
                         p[Dim::dp], p.micro_batch, j.global_batch);
    case PlanError::unsupported_dim:
      return "ep: expert parallelism is not modelled for inference yet";
    case PlanError::cp_seq:
      return fmt::format("cp: 2 x cp = {} does not divide the sequence length {}", 2 * p[Dim::cp],
                         j.seq_len);
    case PlanError::ep_dense:
      return fmt::format("ep: {} is a dense model (no experts)", m.spec.name);
    case PlanError::ep_experts:
      return fmt::format("ep: {} does not divide {}'s {} experts", p[Dim::ep], m.spec.name,
                         m.spec.experts);
    case PlanError::ep_dp:
      if (expert_tp_of(p) == p[Dim::tp])
        return fmt::format("ep: {} does not divide dp x cp = {}", p[Dim::ep],
                           p[Dim::dp] * p[Dim::cp]);
      return fmt::format("ep: {} does not divide tp x cp x dp / expert tp = {}", p[Dim::ep],
                         expert_ranks(p) / expert_tp_of(p));
    case PlanError::ep_order:
      return fmt::format(
          "order: with {} expert layers (ep {}) would get other pipeline groups "
          "than dense layers (cp {}); Megatron-LM requires them equal",
          order_string(p.order), p[Dim::ep], p[Dim::cp]);
    case PlanError::zero_stage: return fmt::format("zero: expected 0, 1, 2 or 3, got {}", p.zero);
    case PlanError::offload: return describe_offload(c, m, p);
    case PlanError::expert_tp:
      if (!m.spec.moe()) return fmt::format("expert_tp: {} has no experts", m.spec.name);
      return fmt::format("expert_tp: expected a divisor of tp {}, got {}", p[Dim::tp], p.expert_tp);
    case PlanError::recompute_layers:
      return fmt::format(
          "recompute_layers: expected a multiple of vpp {} (Megatron-LM's block method recomputes "
          "the same number of layers in each model chunk: --recompute-num-layers = layers / "
          "vpp), got {}",
          p.vpp, p.recompute_layers);
  }
  return "?";
}

}  // namespace topoplan
