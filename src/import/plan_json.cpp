#include "topoplan/import/plan_json.hpp"

#include <fmt/format.h>

#include <set>

#include "detail/json_input.hpp"
#include "detail/json_output.hpp"
#include "topoplan/error.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/inference_report.hpp"

namespace topoplan {
namespace {

void read_plan_fields(const detail::JsonCursor& c, ImportedPlan& out) {
  for (Dim d : {Dim::tp, Dim::cp, Dim::ep, Dim::dp, Dim::pp})
    out.plan[d] = static_cast<int>(c.int_at_least_or(to_string(d), 1, 1));
  out.plan.micro_batch = static_cast<int>(c.int_at_least_or("micro_batch", 1, 1));
  out.plan.vpp = static_cast<int>(c.int_at_least_or("vpp", 1, 1));
  out.plan.first_stage_layers = c.int_at_least_or("first_stage_layers", 1, 0);
  out.plan.last_stage_layers = c.int_at_least_or("last_stage_layers", 1, 0);
  if (c.has("stage_layers")) {
    const auto v = c.at("stage_layers");
    for (std::size_t i = 0; i < v.array_size(); ++i) {
      const auto& n = v.node()[i];
      if (!n.is_number_integer() || n.get<std::int64_t>() < 1 || n.get<std::int64_t>() > 1000000)
        v.at(i).fail_here(fmt::format("expected a layer count from 1, got {}", n.dump()));
      out.plan.stage_layers.push_back(n.get<std::int64_t>());
    }
  }
  if (c.has("order"))
    out.plan.order = parse_order(c.string("order"), c.source() + ": " + c.path_of("order"));
  out.plan.zero = static_cast<int>(c.int_at_least_or("zero", 0, 1));
  if (out.plan.zero > 3) c.fail("zero", "0, 1, 2 or 3");
  if (c.has("recompute"))
    out.plan.recompute =
        parse_recompute(c.string("recompute"), c.source() + ": " + c.path_of("recompute"));
  out.plan.sequence_parallel = c.boolean_or("sequence_parallel", false);
  out.plan.recompute_layers = static_cast<int>(c.int_at_least_or("recompute_layers", 1, 0));
  out.plan.offload_layers = static_cast<int>(c.int_at_least_or("offload_layers", 1, 0));
  // The modules the plan recomputes besides the job's (from session 33).
  if (c.has("recompute_modules"))
    out.plan.recompute_modules = parse_recompute_modules(
        c.string("recompute_modules"), c.source() + ": " + c.path_of("recompute_modules"));
  out.plan.expert_tp = static_cast<int>(c.int_at_least_or("expert_tp", 1, 0));
}

/// What the plan was made for: "cluster", "model", "nodes", and "cluster_spec" and "model_spec",
/// kept as text with their location for the loaders.
void read_inputs(const detail::JsonCursor& c, ImportedPlan& out) {
  if (c.has("cluster")) out.cluster = c.string("cluster");
  if (c.has("model")) out.model = c.string("model");
  if (c.has("nodes")) out.nodes = static_cast<int>(c.positive_int("nodes"));
  if (c.has("cluster_spec")) {
    out.cluster_spec = c.node().at("cluster_spec").dump();
    out.cluster_spec_source = c.source() + ": " + c.path_of("cluster_spec");
  }
  if (c.has("model_spec")) {
    out.model_spec = c.node().at("model_spec").dump();
    out.model_spec_source = c.source() + ": " + c.path_of("model_spec");
  }
}

/// The inputs every result document names first (detail::put_inputs), then `more`.
std::vector<std::string_view> with_input_keys(std::initializer_list<std::string_view> more) {
  std::vector<std::string_view> out{"schema", "model", "cluster",      "gpu",
                                    "nodes",  "gpus",  "cluster_spec", "model_spec"};
  out.insert(out.end(), more);
  return out;
}

/// The keys of a topoplan.plan/v1 object (README "JSON output"): what topoplan writes is read
/// back without a warning; anything else is named, with the closest key.
void warn_unknown_plan_keys(const detail::JsonCursor& c) {
  c.warn_unknown_keys(with_input_keys({"job",
                                       "tp",
                                       "cp",
                                       "ep",
                                       "dp",
                                       "pp",
                                       "micro_batch",
                                       "vpp",
                                       "microbatches",
                                       "order",
                                       "zero",
                                       "recompute",
                                       "sequence_parallel",
                                       "recompute_layers",
                                       "offload_layers",
                                       "recompute_modules",
                                       "expert_tp",
                                       "first_stage_layers",
                                       "last_stage_layers",
                                       "stage_layers",
                                       "fits",
                                       "infeasible_reason",
                                       "step_time_s",
                                       "tokens_per_s",
                                       "model_tflops_per_gpu",
                                       "mfu",
                                       "mfu_format_peak",
                                       "memory_gib_per_gpu",
                                       "breakdown",
                                       "compute_split",
                                       "communication",
                                       "memory_gib",
                                       "source",
                                       "note",
                                       "placement",
                                       "even_split_step_time_s",
                                       "expected_error"}));
}

void read_job(const detail::JsonCursor& c, ImportedPlan& out) {
  if (c.has("seq_len")) out.seq_len = c.positive_int("seq_len");
  if (c.has("global_batch")) out.global_batch = c.positive_int("global_batch");
  if (c.has("dtype"))
    out.dtype = parse_dtype(c.string("dtype"), c.source() + ": " + c.path_of("dtype"));
  if (c.has("flash_attention")) out.flash_attention = c.boolean_or("flash_attention", true);
  if (c.has("tp_comm_overlap")) out.tp_comm_overlap = c.boolean_or("tp_comm_overlap", false);
  if (c.has("ep_comm_overlap")) out.ep_comm_overlap = c.boolean_or("ep_comm_overlap", false);
  if (c.has("grad_reduce_bf16")) out.grad_reduce_bf16 = c.boolean_or("grad_reduce_bf16", false);
  if (c.has("grad_accumulation_pass"))
    out.grad_accumulation_pass = c.boolean_or("grad_accumulation_pass", false);
  if (c.has("fp8_param_gather")) out.fp8_param_gather = c.boolean_or("fp8_param_gather", false);
  if (c.has("fp4_param_gather")) out.fp4_param_gather = c.boolean_or("fp4_param_gather", false);
  if (c.has("cuda_graphs")) out.cuda_graphs = c.boolean_or("cuda_graphs", false);
  if (c.has("moe_dispatcher"))
    out.moe_dispatcher = parse_moe_dispatcher(c.string("moe_dispatcher"),
                                              c.source() + ": " + c.path_of("moe_dispatcher"));
  // 0: Megatron-core's default bucket size (what plan and evaluate write when none was given).
  if (c.has("recompute_modules"))
    out.recompute_modules = parse_recompute_modules(
        c.string("recompute_modules"), c.source() + ": " + c.path_of("recompute_modules"));
  // From session 33; older files: p2p.
  if (c.has("cp_comm_type"))
    out.cp_comm =
        parse_cp_comm(c.string("cp_comm_type"), c.source() + ": " + c.path_of("cp_comm_type"));
  // The multi-token-prediction modules trained (from session 30; -1 and older files: the
  // model's own).
  if (c.has("mtp_layers")) {
    const std::int64_t n = c.int_at_least_or("mtp_layers", -1, -1);
    if (n > kMaxMtpLayers)
      c.fail("mtp_layers", fmt::format("an integer from -1 (the model's) to {}", kMaxMtpLayers));
    if (n >= 0) out.mtp_layers = static_cast<int>(n);
  }
  if (c.has("dp_bucket_params")) {
    out.dp_bucket_params = c.int_at_least_or("dp_bucket_params", 0, 0);
    if (*out.dp_bucket_params > kMaxDpBucketParams)
      c.fail("dp_bucket_params",
             fmt::format("an integer from 0 to {} (0: the default)", kMaxDpBucketParams));
  }
  if (c.has("fa2_attention")) out.fa2_attention = c.boolean_or("fa2_attention", false);
  if (c.has("fp8_tp_all_gather")) out.fp8_tp_all_gather = c.boolean_or("fp8_tp_all_gather", false);
  if (c.has("fp8_attention")) out.fp8_attention = c.boolean_or("fp8_attention", false);
  if (c.has("eager")) out.eager = c.boolean_or("eager", false);
  if (c.has("overlap_grad_reduce"))
    out.overlap_grad_reduce = c.boolean_or("overlap_grad_reduce", true);
  if (c.has("overlap_param_gather"))
    out.overlap_param_gather = c.boolean_or("overlap_param_gather", false);
  if (c.has("overlap_p2p")) out.overlap_p2p = c.boolean_or("overlap_p2p", true);
}

/// A searched plan's explicit placement: "ranks": [[node, gpu], ...], one per rank.
void read_placement(const detail::JsonCursor& c, ImportedPlan& out) {
  if (!c.has("ranks")) return;
  const auto ranks = c.at("ranks");
  const std::int64_t world = out.plan.world();
  if (static_cast<std::int64_t>(ranks.array_size()) != world)
    ranks.fail_here(
        fmt::format("expected {} entries (tp x cp x dp x pp), got {}", world, ranks.array_size()));
  for (std::size_t i = 0; i < ranks.array_size(); ++i) {
    const auto& v = ranks.node()[i];
    if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer() ||
        v[0].get<std::int64_t>() < 0 || v[1].get<std::int64_t>() < 0 ||
        v[0].get<std::int64_t>() > (1 << 20) || v[1].get<std::int64_t>() > (1 << 20))
      ranks.at(i).fail_here(
          fmt::format("expected [node, gpu], two integers >= 0, got {}", v.dump()));
    out.node_of_rank.push_back(v[0].get<int>());
    out.gpu_of_rank.push_back(v[1].get<int>());
  }
}

/// The keys of a topoplan.inference/v1 object (README "Inference"): what evaluate --inference and
/// plan --inference write is read back without a warning.
void warn_unknown_inference_keys(const detail::JsonCursor& c) {
  c.warn_unknown_keys(with_input_keys({"workload",
                                       "tp",
                                       "pp",
                                       "ep",
                                       "dp",
                                       "replicas",
                                       "order",
                                       "fits",
                                       "ttft_ms",
                                       "token_latency_ms",
                                       "end_to_end_ms",
                                       "tokens_per_s",
                                       "tokens_per_s_per_gpu",
                                       "decode_tokens_per_s",
                                       "comm_share",
                                       "decode_ms",
                                       "prefill_ms",
                                       "tp_algorithm",
                                       "tp_protocol",
                                       "tiers",
                                       "memory_gib",
                                       "expected_error"}));
}

/// A serving plan: its degrees, inputs and workload ("workload": prompt_len, output_len, batch,
/// weight_dtype, kv_dtype, runtime).
void read_inference_plan(const detail::JsonCursor& c, ImportedPlan& out) {
  warn_unknown_inference_keys(c);
  for (Dim d : {Dim::tp, Dim::ep, Dim::dp, Dim::pp})
    out.plan[d] = static_cast<int>(c.int_at_least_or(to_string(d), 1, 1));
  if (c.has("order"))
    out.plan.order = parse_order(c.string("order"), c.source() + ": " + c.path_of("order"));
  read_inputs(c, out);
  ImportedWorkload& w = out.serving.emplace();
  if (!c.has("workload")) return;
  const auto wc = c.at("workload");
  wc.warn_unknown_keys(
      {"prompt_len", "output_len", "batch", "weight_dtype", "kv_dtype", "runtime"});
  auto count = [&](const char* key, std::optional<std::int64_t>& v) {
    if (!wc.has(key)) return;
    v = wc.positive_int(key);
    if (*v > kMaxJobCount) wc.fail(key, fmt::format("a positive integer up to {}", kMaxJobCount));
  };
  count("prompt_len", w.prompt_len);
  count("output_len", w.output_len);
  count("batch", w.batch);
  const auto where = [&](const char* key) { return wc.source() + ": " + wc.path_of(key); };
  if (wc.has("weight_dtype"))
    w.weight_dtype = parse_serving_dtype(wc.string("weight_dtype"), where("weight_dtype"));
  if (wc.has("kv_dtype"))
    w.kv_dtype = parse_serving_dtype(wc.string("kv_dtype"), where("kv_dtype"));
  if (wc.has("runtime")) {
    w.runtime = wc.string("runtime");
    (void)parse_runtime(*w.runtime, where("runtime"));
  }
}

}  // namespace

ImportedPlan parse_plan_json(const std::string& text, const std::string& source) {
  auto doc = detail::parse_json(text, source);
  detail::JsonCursor top(doc, source);
  const std::string schema = top.has("schema") ? top.string("schema") : "";
  if (schema == "topoplan.ranks/v1") return parse_ranks_json(text, source);
  ImportedPlan out;
  detail::JsonCursor c = top;
  if (schema == kInferenceSchema || schema == kInferenceSearchSchema) {
    if (schema == kInferenceSearchSchema) {
      auto plans = top.at("plans");
      if (plans.array_size() == 0) plans.fail_here("expected at least one plan (none fitted)");
      c = plans.at(std::size_t{0});
    }
    read_inference_plan(c, out);
    return out;
  }
  if (schema == "topoplan.search/v1") {
    auto plans = top.at("plans");
    if (plans.array_size() == 0) plans.fail_here("expected at least one plan (nothing fitted)");
    c = plans.at(std::size_t{0});
  } else if (schema != "topoplan.plan/v1") {
    top.fail("schema",
             "\"topoplan.plan/v1\", \"topoplan.search/v1\", \"topoplan.ranks/v1\", "
             "\"topoplan.inference/v1\" or \"topoplan.inference-search/v1\"");
  }
  warn_unknown_plan_keys(c);
  read_plan_fields(c, out);
  read_inputs(c, out);
  if (c.has("job")) {
    const auto job = c.at("job");
    job.warn_unknown_keys(detail::job_json_keys());
    read_job(job, out);
  }
  if (c.has("placement")) read_placement(c.at("placement"), out);
  return out;
}

ImportedPlan parse_ranks_json(const std::string& text, const std::string& source) {
  auto doc = detail::parse_json(text, source);
  detail::JsonCursor top(doc, source);
  if (top.string("schema") != "topoplan.ranks/v1") top.fail("schema", "\"topoplan.ranks/v1\"");
  ImportedPlan out;
  read_plan_fields(top.at("plan"), out);
  const std::int64_t world = top.positive_int("world_size");
  if (world != out.plan.world())
    top.fail("world_size", fmt::format("tp x cp x dp x pp = {}", out.plan.world()));
  if (top.has("inputs")) {
    auto in = top.at("inputs");
    read_inputs(in, out);
    read_job(in, out);
  }
  if (top.has("fingerprints")) {
    auto f = top.at("fingerprints");
    out.cluster_fingerprint = f.opt_string("cluster");
    out.model_fingerprint = f.opt_string("model");
    out.job_fingerprint = f.opt_string("job");
  }
  auto ranks = top.at("ranks");
  if (static_cast<std::int64_t>(ranks.array_size()) != world)
    ranks.fail_here(
        fmt::format("expected {} entries (world_size), got {}", world, ranks.array_size()));
  out.node_of_rank.assign(static_cast<std::size_t>(world), -1);
  out.gpu_of_rank.assign(static_cast<std::size_t>(world), -1);
  for (std::size_t i = 0; i < ranks.array_size(); ++i) {
    auto e = ranks.at(i);
    const std::int64_t r = e.int_at_least_or("rank", 0, -1);
    if (r < 0) e.fail("rank", "an integer >= 0");
    if (r >= world) e.fail("rank", fmt::format("a rank below world_size {}", world));
    if (out.node_of_rank[r] >= 0) e.fail("rank", "each rank once");
    if (!e.has("node")) e.fail("node", "an integer >= 0");
    if (!e.has("gpu")) e.fail("gpu", "an integer >= 0");
    out.node_of_rank[r] = static_cast<int>(e.int_at_least_or("node", 0, 0));
    out.gpu_of_rank[r] = static_cast<int>(e.int_at_least_or("gpu", 0, 0));
  }
  return out;
}

ImportedPlan load_plan_file(const std::string& path) {
  return parse_plan_json(detail::read_text_file(path), path);
}

ImportedPlan load_ranks_file(const std::string& path) {
  return parse_ranks_json(detail::read_text_file(path), path);
}

}  // namespace topoplan
