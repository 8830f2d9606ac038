#pragma once
/// Shared by the report writers: stable rounding, and the inputs every result document names.
/// Private to the library (only report sources include nlohmann/json).
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topoplan/collectives.hpp"
#include "topoplan/job.hpp"
#include "topoplan/model.hpp"
#include "topoplan/plan.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/topology.hpp"

namespace topoplan::detail {

/// Rounds to a fixed number of significant digits so JSON output is stable and readable.
inline double sig(double v, int digits = 6) {
  if (v == 0 || !std::isfinite(v)) return v;
  return std::stod(fmt::format("{:.{}g}", v, digits));
}

/// A collective's NCCL protocol ("LL", "LL128", "Simple"), null when it has none.
inline nlohmann::ordered_json protocol_json(Protocol p) {
  return p == Protocol::none ? nlohmann::ordered_json(nullptr)
                             : nlohmann::ordered_json(to_string(p));
}

/// The whole cluster and model ("cluster_spec", "model_spec") when they are not presets as
/// shipped, so that a result read back (--plan, --ranks) finds the inputs it was made from.
inline void put_specs(nlohmann::ordered_json& j, const Cluster& c, const Model& m) {
  if (!is_preset(c.spec()))
    j["cluster_spec"] = nlohmann::ordered_json::parse(cluster_json(c.spec()));
  if (!is_preset(m.spec))
    j["model_spec"] = nlohmann::ordered_json::parse(model_config_json(m.spec));
}

/// The job's fields, as plans and rank files record them.
inline nlohmann::ordered_json job_json(const JobSpec& job) {
  return {{"seq_len", job.seq_len},
          {"global_batch", job.global_batch},
          {"dtype", to_string(job.dtype)},
          {"flash_attention", job.flash_attention},
          {"tp_comm_overlap", job.tp_comm_overlap},
          {"ep_comm_overlap", job.ep_comm_overlap},
          {"overlap_grad_reduce", job.overlap_grad_reduce},
          {"overlap_param_gather", job.overlap_param_gather},
          {"grad_reduce_bf16", job.grad_reduce_bf16},
          {"grad_accumulation_pass", job.grad_accumulation_pass},
          {"fa2_attention", job.fa2_attention},
          {"fp8_tp_all_gather", job.fp8_tp_all_gather},
          {"fp8_attention", job.fp8_attention},
          {"eager", job.eager},
          {"overlap_p2p", job.overlap_p2p},
          {"fp8_param_gather", job.fp8_param_gather},
          {"fp4_param_gather", job.fp4_param_gather},
          {"cuda_graphs", job.cuda_graphs},
          {"moe_dispatcher", to_string(job.moe_dispatcher)},
          {"dp_bucket_params", job.dp_bucket_params},
          {"recompute_modules", recompute_modules_string(job.recompute_modules)},
          {"cp_comm_type", to_string(job.cp_comm)},
          {"mtp_layers", job.mtp_layers}};
}

/// A plan's own fields, as plan objects and rank files record them (the readers' one list is
/// import/plan_json.cpp's read_plan_fields): degrees, micro-batch, interleaving and split, then
/// `microbatches` when given (plan objects carry it, rank files do not), then the order and the
/// memory choices, each optional one only when it applies.
inline void put_plan_fields(nlohmann::ordered_json& j, const Plan& p,
                            std::optional<int> microbatches = std::nullopt) {
  for (Dim d : kDefaultOrder) j[to_string(d)] = p[d];
  j["micro_batch"] = p.micro_batch;
  j["vpp"] = p.vpp;
  if (sets_first_last_split(p)) {
    j["first_stage_layers"] = p.first_stage_layers;
    j["last_stage_layers"] = p.last_stage_layers;
  }
  if (!p.stage_layers.empty()) j["stage_layers"] = p.stage_layers;
  if (microbatches) j["microbatches"] = *microbatches;
  j["order"] = order_string(p.order);
  j["zero"] = p.zero;
  j["recompute"] = to_string(p.recompute);
  if (p.recompute_layers > 0) j["recompute_layers"] = p.recompute_layers;
  if (p.offload_layers > 0) j["offload_layers"] = p.offload_layers;
  if (own_recompute_modules(p) != 0)
    j["recompute_modules"] = recompute_modules_string(own_recompute_modules(p));
  if (expert_tp_of(p) != p[Dim::tp]) j["expert_tp"] = expert_tp_of(p);
  j["sequence_parallel"] = p.sequence_parallel;
}

/// The keys job_json writes: what a job object in topoplan's JSON may hold.
inline const std::vector<std::string_view>& job_json_keys() {
  static const std::vector<std::string> names = [] {
    const nlohmann::ordered_json job = job_json(JobSpec{});
    std::vector<std::string> out;
    for (auto it = job.begin(); it != job.end(); ++it) out.push_back(it.key());
    return out;
  }();
  static const std::vector<std::string_view> views(names.begin(), names.end());
  return views;
}

/// "schema", then what was planned: model, cluster, gpu, nodes, gpus.
inline void put_inputs(nlohmann::ordered_json& j, const char* schema, const Cluster& c,
                       const Model& m) {
  j["schema"] = schema;
  j["model"] = m.spec.name;
  j["cluster"] = c.spec().name;
  j["gpu"] = c.gpu().name;
  j["nodes"] = c.spec().nodes;
  j["gpus"] = c.gpu_count();
  put_specs(j, c, m);
}

}  // namespace topoplan::detail
