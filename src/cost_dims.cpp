#include "topoplan/cost_dims.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "topoplan/cost_model.hpp"

namespace topoplan {

CommTime tp_time(const PlanCore& core, const GroupShape& tp, const Fabric& fab,
                 bool sequence_parallel, bool overlap, const Calibration& cal) {
  CommTime t;
  if (tp.size <= 1) return t;
  CollectiveCost one;
  if (sequence_parallel) {
    one = ring_all_gather(fab, tp, core.tp_bytes);
    one.time += ring_reduce_scatter(fab, tp, core.tp_bytes).time;
  } else {
    one = all_reduce(fab, tp, core.tp_bytes);
  }
  t.algorithm = one.algorithm;
  t.protocol = one.protocol;
  // tp_per_layer counts all-reduces: tp_per_layer / 4 halves (an all-gather or a reduce-scatter)
  // at each of the four matmuls (QKV, attention output, MLP input, MLP output), in each
  // direction. Forward, QKV and the MLP input gather their inputs (FP8 ones when
  // tp_gather_bytes says so); the other two reduce-scatter. Backward runs the transposes in bf16.
  const double c = one.time / 2, each = core.tp_per_layer / 4;
  const double gather =
      sequence_parallel && core.tp_gather_bytes > 0 && core.tp_gather_bytes < core.tp_bytes
          ? ring_all_gather(fab, tp, core.tp_gather_bytes).time
          : c;
  const std::array<double, 4> fwd_half{gather, c, gather, c};
  const std::array<double, 4> scale{1, 1, core.tp_mlp_scale, core.tp_mlp_scale};
  double total = 0;
  for (std::size_t i = 0; i < fwd_half.size(); ++i) total += each * scale[i] * (fwd_half[i] + c);
  t.total = core.layers_per_stage * total;
  if (!overlap) {
    t.exposed = t.total;
    return t;
  }
  // Each half overlaps with the matmul it feeds or follows: a calibrated fraction stays
  // exposed, and all of it beyond that matmul's time (backward: data and weight gradients,
  // twice the forward).
  const double frac = cal.tp_overlap_exposed_fraction;
  double per_layer = 0;
  for (std::size_t i = 0; i < core.tp_hide.size(); ++i) {
    const double fwd = core.tp_hide[i], f = scale[i] * fwd_half[i], b = scale[i] * c;
    per_layer += each * (std::max(frac * f, f - fwd) + std::max(frac * b, b - 2 * fwd));
  }
  t.exposed = core.layers_per_stage * per_layer;
  return t;
}

CommTime cp_time(const PlanCore& core, const GroupShape& cp, const Fabric& fab) {
  CommTime t;
  if (cp.size <= 1) return t;
  const double step = fab.latency[cp.span_tier] + core.cp_bytes / ring_bandwidth(fab, cp);
  const double fwd = fab.base_latency + (cp.size - 1) * step;
  const double bwd = fab.base_latency + (cp.size - 1) * 2.0 * step;
  const double fwd_passes = core.cp_fwd_passes;
  const double attn = core.t_attention_fwd;
  t.total = core.layers_per_stage * (fwd_passes * fwd + bwd);
  t.algorithm = Algorithm::ring;
  // All-gather CP (Megatron-core's TransformerConfig.cp_comm_type: "not async, and cannot be
  // overlapped"): the ring's steps as an all-gather of the K/V chunks (in the forward, and again
  // for the backward) and a reduce-scatter of their gradients, each before or after the attention
  // it serves, all of it exposed.
  t.exposed = core.cp_all_gather ? t.total
                                 : core.layers_per_stage * (fwd_passes * std::max(0.0, fwd - attn) +
                                                            std::max(0.0, bwd - 2.0 * attn));
  return t;
}

double dispatch_server_share(double experts, double top_k, double servers) {
  if (servers <= 1 || top_k <= 0 || experts < top_k) return 1.0;
  // P(none of the top_k experts on a given server): draws without repeats from `experts`, of
  // which experts / servers sit on that server.
  const double on_server = experts / servers;
  double miss = 1.0;
  for (int i = 0; i < static_cast<int>(top_k); ++i)
    miss *= std::max(0.0, (experts - on_server - i) / (experts - i));
  return std::min(1.0, servers * (1.0 - miss) / top_k);
}

EpTime ep_time(const PlanCore& core, const GroupShape& ep, const Fabric& fab, bool overlap,
               double hide) {
  EpTime t;
  if (ep.size <= 1 || core.moe_layers_per_stage <= 0) return t;
  const double share = core.ep_once_per_server
                           ? dispatch_server_share(core.experts, core.top_k, servers_spanned(ep))
                           : 1.0;
  const CollectiveCost one = all_to_all(fab, ep, core.ep_bytes, share);
  const double count = core.moe_layers_per_stage * core.ep_per_layer;
  const double total = count * one.time;
  t.comm = {total, exposed_with_sm_share(fab, total, overlap ? std::max(0.0, total - hide) : total),
            one.algorithm};
  const auto tiers = all_to_all_per_tier(fab, ep, core.ep_bytes, share);
  for (int k = 0; k < Cluster::kMaxTiers; ++k) t.per_tier[k] = count * tiers[k];
  return t;
}

CommTime pp_hop_time(const PlanCore& core, const GroupShape& pp, const GroupShape& tp,
                     const Fabric& fab, bool sequence_parallel) {
  CommTime t;
  if (pp.size <= 1) return t;
  const CollectiveCost one = send_recv(fab, pp.span_tier, core.pp_bytes);
  t.algorithm = one.algorithm;
  t.total = one.time;
  if (tp.size > 1 && !sequence_parallel) t.total += ring_all_gather(fab, tp, core.tp_bytes).time;
  t.exposed = t.total;
  return t;
}

PipelineTime pipeline_time(double work, double hop, int pp, int vpp, int microbatches,
                           bool overlap_p2p) {
  PipelineTime t;
  const double waits = overlap_p2p ? 0.0 : 2.0 * vpp * hop;  // per microbatch
  t.per_microbatch = work + waits;
  t.bubble = (pp - 1) * t.per_microbatch / vpp;
  t.exposed = pp == 1       ? 0.0
              : overlap_p2p ? 2.0 * (static_cast<double>(pp) * vpp - 1) * hop
                            : microbatches * waits;
  t.total = microbatches * 2.0 * vpp * hop;
  return t;
}

namespace {

/// One group's gradient reduction (all buckets) and parameter gather, seconds.
struct DpParts {
  CollectiveCost grad;
  double gather = 0;
};

DpParts dp_parts(const PlanCore& core, const GroupShape& g, double grad_bytes, double param_bytes,
                 const Fabric& fab, int zero) {
  DpParts out;
  if (grad_bytes <= 0) return out;
  // Buckets of core.dp_bucket_params parameters; ZeRO-3 gathers one layer at a time.
  const double n = core.grad_bytes_per_param <= 0
                       ? 1.0
                       : std::max(1.0, std::ceil(grad_bytes / core.grad_bytes_per_param /
                                                 core.dp_bucket_params));
  out.grad =
      zero == 0 ? all_reduce(fab, g, grad_bytes / n) : ring_reduce_scatter(fab, g, grad_bytes / n);
  out.grad.time *= n;
  const double ng = zero >= 3 ? std::max(1.0, core.layers_per_stage) : n;
  out.gather = ng * ring_all_gather(fab, g, param_bytes / ng).time;
  return out;
}

}  // namespace

CommTime dp_time(const PlanCore& core, const PlanShapes& sh, const Fabric& fab, int zero,
                 double compute, bool overlap, bool overlap_gather) {
  CommTime t;
  const double params_gpu = core.params_gpu;
  if ((sh.grad.size <= 1 && sh.expert_grad.size <= 1) || params_gpu <= 0) return t;
  const DpParts dense =
      dp_parts(core, sh.grad, core.dense_grad_bytes, core.dense_param_bytes, fab, zero);
  const DpParts expert =
      dp_parts(core, sh.expert_grad, core.expert_grad_bytes, core.expert_param_bytes, fab, zero);
  t.algorithm = dense.grad.algorithm;
  t.protocol = dense.grad.protocol;
  const double grad = dense.grad.time + expert.grad.time;
  const double gather = dense.gather + expert.gather;
  const double backward = compute * kBackwardFraction, forward = compute - backward;
  const double window = overlap ? backward : 0.0;
  // The bucket the backward reduces last and the forward gathers first: the embedding's own, on
  // the stage that holds it, when it is larger than a bucket.
  const double edge_bucket = std::max(core.dp_bucket_params, core.embedding_bucket_params);
  const double last_bucket = std::min(1.0, edge_bucket / params_gpu);
  auto overlapped = [&](double comm, double hide) {
    return std::max(comm - hide, comm * last_bucket);
  };
  const int mbs = core.microbatches;
  // ZeRO-1/2's parameter gather, exposed or behind the next step's first forward pass.
  double gather_exposed = overlap_gather ? overlapped(gather, forward) : gather;
  double grad_exposed = overlapped(grad, window);
  if (core.vpp > 1 && zero <= 1) {
    // Interleaved 1F1B (Megatron-core's forward_backward_pipelining_with_interleaving, the
    // per-chunk grad_sync_func / param_sync_func): each of the vpp model chunks reduces its
    // gradients once its last backward is done and gathers its parameters just before its first
    // forward. Consecutive chunks' last backwards (first forwards) are min(m, pp) chunk passes
    // apart, so each chunk's share hides behind that many; the last chunk's reduction comes
    // after all the compute and shows in full, the first chunk's gather overlaps its own layers.
    const double v = core.vpp, apart = std::min(mbs, core.pp);
    auto later_chunks = [&](double comm, double pass) {
      return std::max(0.0, (v - 1.0) / v * (comm - apart * pass));
    };
    const double chunk_last_bucket = std::min(1.0, edge_bucket * v / params_gpu);
    if (overlap) grad_exposed = grad / v + later_chunks(grad, backward);
    if (overlap_gather)
      gather_exposed = std::max(gather / v - forward / v, gather / v * chunk_last_bucket) +
                       later_chunks(gather, forward);
  }
  switch (zero) {
    case 0:
      t.exposed = grad_exposed;
      t.total = grad;
      break;
    case 1:
      t.exposed = grad_exposed + gather_exposed;
      t.total = grad + gather;
      break;
    case 2:
      t.exposed = mbs * overlapped(grad, window) + gather_exposed;
      t.total = mbs * grad + gather;
      break;
    default:
      t.exposed = mbs * overlapped(grad + 2 * gather, overlap ? compute : 0.0);
      t.total = mbs * (grad + 2 * gather);
      break;
  }
  t.exposed = exposed_with_sm_share(fab, t.total, t.exposed);
  return t;
}

}  // namespace topoplan
