#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "topoplan/export.hpp"

namespace topoplan {

std::string megatron_order_flag(const Plan& p, bool& expressible) {
  expressible = true;
  if (same_layout(p, kDefaultOrder)) return "";
  if (same_layout(p, kTpPpDpOrder)) return "--use-tp-pp-dp-mapping";
  expressible = false;
  return "";
}

namespace {

/// What starts a placement that is not rank r on GPU r: only the launchers that can.
std::string launch_note(const RankTable& t) {
  const std::string alt = launchers_for(t);
  if (alt.empty())
    return "# ranks are placed where no launcher format here can put them as is: start one "
           "process per rank on the node and GPU ranks.json names\n";
  return fmt::format(
      "# ranks are placed on other GPUs than rank order: launch with topoplan "
      "export {} so that rank r runs where ranks.json says\n",
      alt);
}

/// The model's shape as Megatron-LM (megatron-core) arguments, so that the run trains the model
/// that was planned. The vocabulary comes from the tokenizer and is only named in a comment.
std::string megatron_model_args(const ModelSpec& m, std::int64_t seq_len) {
  std::string a = fmt::format(
      "--num-layers {} --hidden-size {} --ffn-hidden-size {} "
      "--num-attention-heads {}",
      m.layers, m.hidden, m.ffn, m.heads);
  if (!m.mla() && m.kv_heads != m.heads)
    a += fmt::format(" --group-query-attention --num-query-groups {}", m.kv_heads);
  if (!m.mla() && m.head_dim * m.heads != m.hidden)
    a += fmt::format(" --kv-channels {}", m.head_dim);
  a += fmt::format(" --max-position-embeddings {}", std::max(seq_len, m.positions));
  a += m.positions > 0 ? " --position-embedding-type learned_absolute"
                       : " --position-embedding-type rope";
  if (m.gated_mlp) a += " --swiglu";
  if (!m.layernorm_bias) a += " --normalization RMSNorm";
  if (!m.biases) a += " --disable-bias-linear";
  if (!m.tied_embeddings) a += " --untie-embeddings-and-output-weights";
  if (m.moe()) {
    a += fmt::format(" --num-experts {} --moe-router-topk {} --moe-ffn-hidden-size {}", m.experts,
                     m.top_k, m.expert_ffn);
    if (m.shared_experts > 0)
      a += fmt::format(" --moe-shared-expert-intermediate-size {}",
                       m.shared_experts * m.shared_ffn());
    if (m.first_dense_layers > 0)
      a += fmt::format(" --moe-layer-freq '([0]*{}+[1]*{})'", m.first_dense_layers,
                       m.layers - m.first_dense_layers);
  }
  if (m.mla()) {
    a += fmt::format(
        " --multi-latent-attention --kv-lora-rank {} --qk-head-dim {} "
        "--qk-pos-emb-head-dim {} --v-head-dim {}",
        m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim);
    if (m.q_lora_rank > 0) a += fmt::format(" --q-lora-rank {}", m.q_lora_rank);
  }
  if (m.mtp_layers > 0) a += fmt::format(" --mtp-num-layers {}", m.mtp_layers);
  return a;
}

}  // namespace

namespace {

/// Megatron-core's --pipeline-model-parallel-layout for a split whose stages are not multiples
/// of vpp: virtual stage c x pp + i is chunk c of rank i, its layers as t, the embedding E on the
/// first and the loss L on the last, the multi-token-prediction layers m just before the loss
/// (where topoplan costs them). A first stage with fewer layers than chunks leaves its first
/// chunk to the embedding alone (a last stage, its last chunk to the loss).
std::string pipeline_layout(const Plan& p, const StageLayers& split, std::int64_t mtp_layers) {
  const int pp = p[Dim::pp];
  std::string out;
  for (int c = 0; c < p.vpp; ++c)
    for (int i = 0; i < pp; ++i) {
      const std::int64_t stage = layers_on_stage(p, split, i);
      if (!out.empty()) out += '|';
      if (c == 0 && i == 0) out += 'E';
      const int chunk = i == 0 && stage < p.vpp ? p.vpp - 1 - c : c;
      out += std::string(static_cast<std::size_t>(chunk_layers(stage, p.vpp, chunk)), 't');
      if (c == p.vpp - 1 && i == pp - 1) {
        out.append(static_cast<std::size_t>(mtp_layers), 'm');
        out += 'L';
      }
    }
  return out;
}

/// The interleaving and the split: virtual stages by their current name (older Megatron-LM:
/// --num-layers-per-virtual-pipeline-stage layers / (pp x vpp)); an uneven split names the first
/// and last stages' layers; a split no such flag gives (chunks of unequal size, middle stages
/// that differ) as a layout string.
std::string pipeline_args(const Plan& p, const StageLayers& split, std::int64_t mtp_layers) {
  bool uneven_middle = false;
  for (int i = 1; i + 1 < p[Dim::pp]; ++i)
    uneven_middle = uneven_middle || layers_on_stage(p, split, i) != split.middle;
  if (uneven_middle || split.first % p.vpp != 0 || split.middle % p.vpp != 0 ||
      split.last % p.vpp != 0)
    return fmt::format(" --pipeline-model-parallel-layout \"{}\"",
                       pipeline_layout(p, split, mtp_layers));
  std::string args;
  if (p.vpp > 1) args += fmt::format(" --num-virtual-stages-per-pipeline-rank {}", p.vpp);
  if (!split.even())
    args +=
        fmt::format(" --decoder-first-pipeline-num-layers {} --decoder-last-pipeline-num-layers {}",
                    split.first, split.last);
  return args;
}

/// Recomputation: selective (the attention core) and the modules the job and the plan recompute, or
/// full (every layer, or the block method's count per model chunk).
std::string recompute_args(const Plan& p, const JobSpec& j) {
  if (p.recompute == Recompute::full && p.recompute_layers > 0)  // per model chunk
    return fmt::format(
        " --recompute-granularity full --recompute-method block --recompute-num-layers {}",
        p.recompute_layers / p.vpp);
  if (p.recompute == Recompute::full)
    return " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  std::string args;
  const unsigned modules = recomputed_modules(j, p);
  if (p.recompute == Recompute::selective || modules != 0)
    args += " --recompute-granularity selective";
  if (modules != 0) {
    std::string names = recompute_modules_string(modules);
    std::replace(names.begin(), names.end(), ',', ' ');
    args += fmt::format(" --recompute-modules {}{}",
                        p.recompute == Recompute::selective ? "core_attn " : "", names);
  }
  return args;
}

/// The overlap flags and the data-parallel settings the job asks for.
std::string overlap_and_data_parallel_args(const Plan& p, const JobSpec& j) {
  std::string args;
  if (j.overlap_grad_reduce) args += " --overlap-grad-reduce";
  if (j.overlap_param_gather && p.zero >= 1) args += " --overlap-param-gather";
  if (j.grad_reduce_bf16 && j.dtype != Dtype::fp16) args += " --grad-reduce-in-bf16";
  if (low_precision_param_gather(j))
    args += j.dtype == Dtype::nvfp4 ? " --fp4-param-gather" : " --fp8-param-gather";
  if (j.fp8_attention) args += " --fp8-dot-product-attention";
  if (mxfp8_params_gathered_in_bf16(j)) args += " --reuse-grad-buf-for-mxfp8-param-ag";
  if (j.dp_bucket_params > 0) args += fmt::format(" --ddp-bucket-size {}", j.dp_bucket_params);
  if (j.tp_comm_overlap) args += " --tp-comm-overlap";
  if (j.ep_comm_overlap && p[Dim::ep] > 1) args += " --overlap-moe-expert-parallel-comm";
  if (j.overlap_p2p && p.vpp > 1) args += " --overlap-p2p-communication";
  if (p.zero >= 1) args += " --use-distributed-optimizer";
  return args;
}

/// CUDA graphs on the static parts: attention, and an MoE layer's router and dispatch
/// preprocessing (the routed experts' shapes change with the routing). Current Megatron-LM calls
/// the scope --cuda-graph-modules and still reads --cuda-graph-scope (arguments.py), the name
/// Megatron-Bridge's recipes set.
std::string cuda_graph_args(const Model& m, const JobSpec& j) {
  if (!j.cuda_graphs) return "";
  return std::string(" --cuda-graph-impl transformer_engine --cuda-graph-scope attn") +
         (m.spec.moe() ? " moe_router moe_preprocess" : "");
}

/// An MoE model's token dispatcher (Megatron-core's default, allgather, is not what topoplan
/// costs, so it is always written); flex with HybridEP, the backend Megatron-Bridge's recipes
/// pick (DeepEP sends once per server too).
std::string dispatcher_args(const Model& m, const JobSpec& j) {
  if (!m.spec.moe()) return "";
  return j.moe_dispatcher == MoeDispatcher::flex
             ? " --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep"
             : " --moe-token-dispatcher-type alltoall";
}

}  // namespace

std::string megatron_pipeline_args(const Plan& p, const ModelSpec& m) {
  return pipeline_args(p, split_of(p, m.layers), m.mtp_layers);
}

std::string export_megatron_args(const ExportContext& x) {
  const Plan& p = x.plan;
  const JobSpec& j = x.run.job;
  std::string out = fmt::format("# Megatron-LM arguments for {} (topoplan, order {})\n",
                                short_order_string(p), order_string(p.order));
  bool expressible = false;
  const std::string order_flag = megatron_order_flag(p, expressible);
  std::string args = fmt::format(
      "--tensor-model-parallel-size {} --pipeline-model-parallel-size {} "
      "--context-parallel-size {} --expert-model-parallel-size {} --micro-batch-size {} "
      "--global-batch-size {} --seq-length {} {}",
      p[Dim::tp], p[Dim::pp], p[Dim::cp], p[Dim::ep], p.micro_batch, j.global_batch, j.seq_len,
      j.dtype == Dtype::fp8     ? "--bf16 --fp8-format hybrid"
      : j.dtype == Dtype::mxfp8 ? "--bf16 --fp8-format e4m3 --fp8-recipe mxfp8"
      : j.dtype == Dtype::nvfp4 ? "--bf16 --fp4-format e2m1 --fp4-recipe nvfp4"
                                : fmt::format("--{}", to_string(j.dtype)));
  const StageLayers split = split_of(p, x.run.model.spec.layers);
  args += megatron_pipeline_args(p, x.run.model.spec);
  if (folds_experts(p)) args += fmt::format(" --expert-tensor-parallel-size {}", expert_tp_of(p));
  if (p.sequence_parallel) args += " --sequence-parallel";
  args += overlap_and_data_parallel_args(p, j);
  args += cuda_graph_args(x.run.model, j);
  args += dispatcher_args(x.run.model, j);
  if (p[Dim::cp] > 1 && j.cp_comm != CpComm::p2p)
    args += fmt::format(" --cp-comm-type {}", to_string(j.cp_comm));
  args += recompute_args(p, j);
  if (p.recompute == Recompute::selective_op)
    out +=
        "# recompute selective-op is torchtitan's op-level checkpointing: Megatron-LM has no "
        "such flag, none passed (closest: --recompute-granularity selective)\n";
  if (p.offload_layers > 0)
    args += fmt::format(" --cpu-offloading --cpu-offloading-num-layers {}", p.offload_layers);
  if (!order_flag.empty()) args += " " + order_flag;
  args += fmt::format(" {}",
                      megatron_model_args(x.run.model.spec, j.seq_len));  // GCC 12 warns on " " + s
  out += fmt::format("# model {}: vocabulary {} (Megatron-LM takes it from the tokenizer)\n",
                     x.run.model.spec.name, x.run.model.spec.vocab);
  if (!p.stage_layers.empty())
    out += fmt::format("# pipeline: {} layers as {} from the first stage to the last\n",
                       x.run.model.spec.layers, fmt::join(p.stage_layers, " "));
  else if (!split.even())
    out += fmt::format(
        "# pipeline: {} layers as {} on the first stage, {} on each middle stage, {} on "
        "the last\n",
        x.run.model.spec.layers, split.first, split.middle, split.last);
  if (x.run.job.overlap_p2p && p.vpp == 1 && p[Dim::pp] > 1)
    out +=
        "# Megatron-LM overlaps pipeline sends only with interleaving (vpp > 1); this plan was "
        "costed with them overlapped (plan with --no-overlap-p2p to cost them waiting)\n";
  if (p.zero >= 2)
    out += fmt::format(
        "# ZeRO-{} has no Megatron-LM flag; --use-distributed-optimizer shards "
        "only the optimizer state (ZeRO-1)\n",
        p.zero);
  if (!expressible) {
    out += fmt::format(
        "# order {} is not expressible with Megatron-LM's flags (its default tp-cp-ep-dp-pp or "
        "--use-tp-pp-dp-mapping); create these process groups explicitly (also in ranks.json):\n",
        short_order_string(p));
    for (Dim d : kDefaultOrder) {
      if (p[d] <= 1) continue;
      const auto groups = x.mapping.groups(d);
      out += fmt::format("#   {} groups ({}):", to_string(d), groups.size());
      const std::size_t shown = std::min<std::size_t>(groups.size(), 16);
      for (std::size_t i = 0; i < shown; ++i)
        out += fmt::format(" [{}]", fmt::join(groups[i], ","));
      if (shown < groups.size()) out += " ...";
      out += "\n";
    }
  }
  if (!x.mapping.identity()) out += launch_note(x.table);
  return out + args + "\n";
}

namespace {

/// A mesh over launch ranks: processes started node by node in GPU order build the placement's
/// groups from it, whatever the placement (DeviceMesh takes any tensor of ranks).
std::string explicit_mesh(const std::vector<int>& launch, const std::string& shape,
                          const std::string& names, bool single) {
  std::string out =
      "# An explicit placement: start one process per GPU it uses, numbered node by node in GPU\n"
      "# order (ranks.json launch_rank; CUDA_VISIBLE_DEVICES = the GPUs ranks.json names on that\n"
      "# node); the mesh below then gives every process the groups topoplan placed it in.\n"
      "import torch\nfrom torch.distributed.device_mesh import DeviceMesh\n\n";
  std::string ranks;
  for (std::size_t i = 0; i < launch.size(); ++i) {
    if (i > 0) ranks += i % 32 == 0 ? ",\n    " : ", ";
    ranks += std::to_string(launch[i]);
  }
  out += fmt::format("launch_ranks = torch.tensor([\n    {}]).reshape({}{})\n", ranks, shape,
                     single ? "," : "");
  out += fmt::format("mesh = DeviceMesh(\"cuda\", launch_ranks, mesh_dim_names=({}{}))\n", names,
                     single ? "," : "");
  return out;
}

}  // namespace

std::string export_devicemesh(const ExportContext& x) {
  const Plan& p = x.plan;
  // DeviceMesh is row-major (last dim innermost): reverse the order string, drop size-1 dims.
  std::vector<Dim> dims;
  for (int i = kDims - 1; i >= 0; --i) {
    const Dim d = p.order[i];
    if (d != Dim::ep && p[d] > 1) dims.push_back(d);  // EP re-divides the mesh for MoE layers
  }
  if (dims.empty()) dims.push_back(Dim::dp);
  std::string shape, names;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const char* sep = i ? ", " : "";
    shape += fmt::format("{}{}", sep, p[dims[i]]);
    names += fmt::format("{}\"{}\"", sep, to_string(dims[i]));
  }
  std::string out = fmt::format(
      "# PyTorch DeviceMesh for {} (order {}, reversed: the last dim "
      "is innermost)\n",
      short_order_string(p), order_string(p.order));
  if (!x.mapping.identity() && !launchers_for(x.table).empty()) out += launch_note(x.table);
  if (p[Dim::ep] > 1)
    out += fmt::format(
        "# expert parallelism ({}) re-divides the mesh for MoE layers: see "
        "ranks.json groups.ep\n",
        p[Dim::ep]);
  const bool single = dims.size() == 1;
  // Ranks in device order (launchers number them so): the mesh of the order string is right.
  bool in_device_order = true;
  const std::vector<int> launch = launch_ranks(x.mapping);
  for (std::size_t r = 0; r < launch.size(); ++r)
    in_device_order = in_device_order && launch[r] == static_cast<int>(r);
  if (!in_device_order) return out + explicit_mesh(launch, shape, names, single);
  out += "from torch.distributed.device_mesh import init_device_mesh\n\n";
  out += fmt::format("mesh = init_device_mesh(\"cuda\", ({}{}), mesh_dim_names=({}{}))\n", shape,
                     single ? "," : "", names, single ? "," : "");
  return out;
}

}  // namespace topoplan
