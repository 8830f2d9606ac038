#include "cli/common.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "topoplan/error.hpp"
#include "topoplan/presets.hpp"

namespace topoplan::cli {

namespace {

CLI::Validator positive_up_to(long long max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        long long v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc{} && stop == end && v >= 1 && v <= max) return {};
        const bool number =
            (ec == std::errc{} || ec == std::errc::result_out_of_range) && stop == end;
        return fmt::format("expected a positive integer up to {}, got {}", max,
                           number ? text : "'" + text + "'");
      },
      "");
}

/// The parameter all-gathers in the training's low-precision format.
void add_low_precision_gathers(CLI::App& cmd, InputOptions& o) {
  cmd.add_flag(
      "--fp8-param-gather", o.fp8_param_gather,
      "with --dtype fp8 (or mxfp8) and ZeRO >= 1, the data-parallel parameter all-gathers move the "
      "layers' weights in FP8 (MXFP8) (Megatron-core --fp8-param-gather, NeMo fp8_params, "
      "torchao enable_fsdp_float8_all_gather)");
  cmd.add_flag("--fp4-param-gather", o.fp4_param_gather,
               "with --dtype nvfp4 and ZeRO >= 1, the parameter all-gathers move the layers' "
               "weights in NVFP4 (Megatron-core --fp4-param-gather)");
  cmd.add_flag(
      "--fp8-attention", o.fp8_attention,
      "with --dtype fp8, mxfp8 or nvfp4, fused attention's matmuls run in FP8 at the FP8 rate "
      "(Megatron-core --fp8-dot-product-attention, Transformer Engine fp8_dpa)");
}

/// How MoE layers run: their dispatcher and whether their static parts are graphed.
void add_moe_options(CLI::App& cmd, InputOptions& o) {
  cmd.add_option("--moe-dispatcher", o.moe_dispatcher,
                 "alltoall (one copy per routed expert) or flex (HybridEP, DeepEP: each token once "
                 "to every other server holding one of its experts)")
      ->capture_default_str();
  cmd.add_flag("--cuda-graphs", o.cuda_graphs,
               "attention and the MoE router and dispatch preprocessing run as CUDA graphs "
               "(Megatron-core --cuda-graph-impl transformer_engine): MoE layers are not bound by "
               "the host's launch rate");
}

/// --moe-dispatcher if given, else what the plan file records, else alltoall.
MoeDispatcher dispatcher_of(const InputOptions& o, const ImportedPlan& f) {
  if (!o.given("--moe-dispatcher") && f.moe_dispatcher) return *f.moe_dispatcher;
  return parse_moe_dispatcher(o.moe_dispatcher, "--moe-dispatcher");
}

/// Megatron-core's bucket size and recomputed modules.
void add_megatron_tuning(CLI::App& cmd, InputOptions& o) {
  cmd.add_option("--dp-bucket-params", o.dp_bucket_params,
                 "parameters per data-parallel gradient bucket (Megatron-LM --ddp-bucket-size; "
                 "default: Megatron-core's max(40M, 1M x DP))");
  cmd.add_option(
      "--recompute-modules", o.recompute_modules,
      "modules the backward recomputes instead of keeping, comma-separated: layernorm, "
      "mla_up_proj, moe_act (Megatron-core --recompute-modules; with --recompute none or "
      "selective)");
  cmd.add_option("--mtp-layers", o.mtp_layers,
                 "multi-token-prediction modules to train (Megatron-LM --mtp-num-layers; 0: none; "
                 "default or -1: the model's own, num_nextn_predict_layers)");
  cmd.add_option(
         "--cp-comm-type", o.cp_comm_type,
         "how context parallelism exchanges keys and values: p2p (a ring overlapped with "
         "attention) or all_gather (gathered before attention, not overlapped; Megatron-core "
         "--cp-comm-type, the Llama 3 paper's CP)")
      ->capture_default_str();
}

/// The dispatcher, the bucket size and the recomputed modules: a flag given, else what the plan
/// file records, else the default.
void set_megatron_tuning(const InputOptions& o, const ImportedPlan& f, JobSpec& job) {
  job.moe_dispatcher = dispatcher_of(o, f);
  job.dp_bucket_params =
      o.given("--dp-bucket-params") ? o.dp_bucket_params : f.dp_bucket_params.value_or(0);
  job.recompute_modules = o.given("--recompute-modules")
                              ? parse_recompute_modules(o.recompute_modules, "--recompute-modules")
                              : f.recompute_modules.value_or(0u);
  job.mtp_layers = o.given("--mtp-layers") ? o.mtp_layers : f.mtp_layers.value_or(-1);
  job.cp_comm = !o.given("--cp-comm-type") && f.cp_comm
                    ? *f.cp_comm
                    : parse_cp_comm(o.cp_comm_type, "--cp-comm-type");
}

}  // namespace

void require_positive_counts(CLI::App& cmd) {
  // Tokens and sequences as the job's own bound; degrees and servers as the cluster's GPUs.
  static constexpr const char* kTokenFlags[] = {"--seq-len",    "--global-batch", "--prompt-len",
                                                "--output-len", "--batch",        "--micro-batch"};
  static constexpr const char* kGpuFlags[] = {"--nodes",
                                              "--gpus",
                                              "--tp",
                                              "--pp",
                                              "--dp",
                                              "--cp",
                                              "--ep",
                                              "--expert-tp",
                                              "--vpp",
                                              "--max-tp",
                                              "--max-pp",
                                              "--max-cp",
                                              "--max-ep",
                                              "--threads",
                                              "--recompute-layers",
                                              "--offload-layers",
                                              "--first-stage-layers",
                                              "--last-stage-layers"};
  for (const char* flag : kTokenFlags)
    if (CLI::Option* o = cmd.get_option_no_throw(flag)) o->check(positive_up_to(kMaxJobCount));
  for (const char* flag : kGpuFlags)
    if (CLI::Option* o = cmd.get_option_no_throw(flag)) o->check(positive_up_to(Cluster::kMaxGpus));
  if (CLI::Option* o = cmd.get_option_no_throw("--top"))
    o->check(positive_up_to(std::numeric_limits<int>::max()));
}

std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  // CLI11 says "Could not convert: --flag = value" and "--flag: value not in {a,b}"; say what the
  // flag takes instead.
  static constexpr std::string_view kConvert = "Could not convert: ";
  const std::string what = e.what();
  const auto not_in = what.find(" not in {");
  const auto colon = what.find(": ");
  if (not_in != std::string::npos && colon < not_in && what.ends_with("}")) {
    std::string choices = what.substr(not_in + 9, what.size() - not_in - 10);
    for (std::size_t i = 0; (i = choices.find(',', i)) != std::string::npos; i += 2)
      choices.replace(i, 1, ", ");
    return fmt::format("{}: expected one of {}, got '{}'", what.substr(0, colon), choices,
                       what.substr(colon + 2, not_in - colon - 2));
  }
  const auto eq = what.find(" = ");
  if (!what.starts_with(kConvert) || eq == std::string::npos) return what;
  const std::string flag = what.substr(kConvert.size(), eq - kConvert.size());
  std::string expected = "a number";
  std::vector<const CLI::App*> apps{&app};
  for (std::size_t i = 0; i < apps.size(); ++i) {
    for (const CLI::App* sub : apps[i]->get_subcommands()) apps.push_back(sub);
    if (const CLI::Option* o = apps[i]->get_option_no_throw(flag))
      if (o->get_type_name().find("INT") != std::string::npos) expected = "an integer";
  }
  return fmt::format("{}: expected {}, got '{}'", flag, expected, what.substr(eq + 3));
}

/// What the search may trade for memory besides the recomputation it searches, each on where
/// the stack has it.
void add_memory_trade_options(CLI::App& cmd, InputOptions& o) {
  cmd.add_flag("--no-activation-offload", o.no_activation_offload,
               "the search does not offload activations to host memory (the megatron-core and "
               "nemo stacks may, on GPUs with a host link, where it beats recomputation)");
  cmd.add_flag("--no-recompute-module-search", o.no_recompute_module_search,
               "the search does not add recomputed modules to a plan that fits only with them "
               "(the megatron-core and nemo stacks may: layernorm, then moe_act, then "
               "mla_up_proj, Megatron-core's --recompute-modules)");
}

void add_input_options(CLI::App& cmd, InputOptions& o) {
  o.cmd = &cmd;
  cmd.add_option("--cluster", o.cluster, "cluster preset name or cluster JSON file")
      ->capture_default_str();
  cmd.add_option("--nodes", o.nodes, "number of servers (default: the cluster's own)");
  cmd.add_option("--model", o.model, "model preset name or Hugging Face config.json")
      ->capture_default_str();
  cmd.add_option("--seq-len", o.seq_len, "tokens per sequence")->capture_default_str();
  cmd.add_option("--global-batch", o.global_batch, "sequences per optimizer step")
      ->capture_default_str();
  cmd.add_option("--dtype", o.dtype,
                 "bf16, fp16, fp8, nvfp4 or mxfp8 (FP8/NVFP4/MXFP8 linear layers)")
      ->capture_default_str();
  cmd.add_flag("--no-flash-attention", o.no_flash_attention,
               "attention scores are materialised (s^2 memory and HBM traffic)");
  cmd.add_flag("--tp-overlap", o.tp_overlap, "TP communication overlapped with matmuls");
  cmd.add_flag("--ep-overlap", o.ep_overlap,
               "EP all-to-all hidden behind another microbatch's compute (DualPipe, Megatron-core "
               "--overlap-moe-expert-parallel-comm)");
  cmd.add_flag("--grad-reduce-bf16", o.grad_reduce_bf16,
               "bf16/fp8 training keeps and reduces gradients in bf16, not fp32 (Megatron-LM "
               "--grad-reduce-in-bf16, NeMo grad_sync_dtype: bf16)");
  cmd.add_flag("--grad-accumulation-pass", o.grad_accumulation_pass,
               "each micro-batch's bf16 gradients are added into fp32 copies in a separate pass "
               "over the stage's parameters (DeepSpeed's BF16_Optimizer: bf16 with ZeRO stage 0 "
               "in the DeepSpeed config); Megatron-LM fuses it into the weight-gradient GEMM");
  add_low_precision_gathers(cmd, o);
  add_moe_options(cmd, o);
  add_megatron_tuning(cmd, o);
  // An on/off pair whose default comes from the stack: the two exclude each other.
  auto flag_pair = [&](const char* on, bool& on_value, const char* on_help, const char* off,
                       bool& off_value, const char* off_help) {
    cmd.add_flag(on, on_value, on_help)->excludes(cmd.add_flag(off, off_value, off_help));
  };
  flag_pair("--fa2-attention", o.fa2_attention,
            "attention runs FlashAttention-2 kernels (PyTorch SDPA; --stack torchtitan's default), "
            "slower on Hopper than cuDNN / Transformer Engine fused attention",
            "--no-fa2-attention", o.no_fa2_attention,
            "attention runs fused (cuDNN, Transformer Engine) kernels");
  flag_pair("--fp8-tp-all-gather", o.fp8_tp_all_gather,
            "with --dtype fp8 and sequence parallelism, TP's forward all-gathers move FP8 inputs "
            "(torchao Float8 tensor parallelism; --stack torchtitan's default)",
            "--no-fp8-tp-all-gather", o.no_fp8_tp_all_gather,
            "TP all-gathers move bf16 activations (the default elsewhere)");
  cmd.add_flag("--eager", o.eager,
               "PyTorch eager mode (torchtitan without torch.compile): norms, rotary embeddings, "
               "SwiGLU and residual adds run unfused, several HBM passes each");
  cmd.add_flag("--no-overlap-grad-reduce", o.no_overlap_grad_reduce,
               "DP gradient reduction after the backward pass, not during it");
  cmd.add_flag("--no-overlap-p2p", o.no_overlap_p2p,
               "PP sends wait on the critical path (Megatron without --overlap-p2p-communication)");
  auto* gather = cmd.add_flag("--overlap-param-gather", o.overlap_param_gather,
                              "ZeRO-1/2: the parameter all-gather runs during the next step's "
                              "forward pass (Megatron-LM --overlap-param-gather; the megatron-core "
                              "and nemo stacks' default)");
  cmd.add_flag("--no-overlap-param-gather", o.no_overlap_param_gather,
               "the parameter all-gather after the optimizer step is exposed")
      ->excludes(gather);
  add_memory_trade_options(cmd, o);
  cmd.add_option("--gpus", o.gpus, "use this many of the cluster's GPUs (default: all)");
  cmd.add_option("--exclude", o.exclude,
                 "GPUs that are down: SERVER or SERVER:GPU, comma-separated (SERVER a host name "
                 "or an index from 0; on NVL72 racks also a tray from compute_hosts, its GPUs "
                 "0-3), e.g. node07:3,node12; plans place ranks around them");
  cmd.add_option("--memory-headroom", o.memory_headroom,
                 "fraction of GPU memory a plan must leave free (0-0.9)")
      ->capture_default_str();
  cmd.add_option("--stack", o.stack,
                 "software stack: megatron-core (default), megatron-2021, nemo, torchtitan, "
                 "deepspeed; sets fused attention, the overlap flags, the optimizer sharding and "
                 "sequence parallelism as that stack does (explicit flags win)");
  cmd.add_option(
      "--calibration", o.calibration,
      "JSON file overriding calibration constants (keys: topoplan calibrate --constants)");
}

void add_choice_options(CLI::App& cmd, ChoiceOptions& o, bool searched) {
  const char* dflt = searched ? " (default: searched)" : "";
  cmd.add_option("--zero", o.zero,
                 fmt::format("ZeRO stage 0-3, 1 = distributed optimizer{}",
                             searched ? dflt : " (default: 1)"));
  cmd.add_option(
      "--recompute", o.recompute,
      fmt::format(
          "activation recomputation: none, selective, full, selective-op (torchtitan's op-level "
          "selective checkpointing){}",
          searched ? dflt : " (default: none)"));
  auto* on = cmd.add_flag("--sequence-parallel", o.sp_on,
                          fmt::format("Megatron sequence parallelism on{}", dflt));
  auto* off = cmd.add_flag("--no-sequence-parallel", o.sp_off, "sequence parallelism off");
  on->excludes(off);
}

void add_plan_options(CLI::App& cmd, PlanOptions& o) {
  cmd.add_option("--tp", o.tp, "tensor-parallel degree (default 1)");
  cmd.add_option("--pp", o.pp, "pipeline-parallel degree (default 1)");
  cmd.add_option("--dp", o.dp, "data-parallel degree (default: GPUs / (tp x cp x pp))");
  cmd.add_option("--cp", o.cp, "context-parallel degree (default 1)");
  cmd.add_option("--ep", o.ep, "expert-parallel degree (default 1)");
  cmd.add_option("--expert-tp", o.expert_tp,
                 "tensor-parallel degree of the experts, a divisor of --tp (Megatron-core's "
                 "--expert-tensor-parallel-size; default: --tp). Below --tp the expert groups fold "
                 "over the TP ranks: ep x expert-tp divides tp x cp x dp");
  cmd.add_option("--micro-batch", o.micro_batch, "micro-batch size (default 1)");
  cmd.add_option("--vpp", o.vpp, "virtual pipeline stages per rank, interleaved 1F1B (default 1)");
  cmd.add_option("--order", o.order, "Megatron order string (default tp-cp-ep-dp-pp)");
  cmd.add_option("--recompute-layers", o.recompute_layers,
                 "with --recompute full: recompute only this many layers per pipeline stage "
                 "(Megatron-LM's block method; default: all)");
  cmd.add_option("--offload-layers", o.offload_layers,
                 "offload the activations of this many layers to host memory instead of keeping "
                 "them (Megatron-core's --cpu-offloading --cpu-offloading-num-layers; pp 1, "
                 "recompute none, a GPU with host_link_GBps)");
  cmd.add_option("--first-stage-layers", o.first_stage_layers,
                 "layers on the first pipeline stage (Megatron-LM's "
                 "--decoder-first-pipeline-num-layers; default: the uneven split topoplan picks)");
  cmd.add_option("--last-stage-layers", o.last_stage_layers,
                 "layers on the last pipeline stage (--decoder-last-pipeline-num-layers)");
  cmd.add_option("--stage-layers", o.stage_layers,
                 "layers on every pipeline stage, comma-separated, first to last (exported as "
                 "Megatron-core's --pipeline-model-parallel-layout)");
  add_choice_options(cmd, o.choice, false);
  cmd.add_option("--plan", o.plan_file,
                 "the plan as JSON written by plan, evaluate or export (first plan of a search)");
  cmd.add_option("--ranks", o.ranks_file,
                 "an explicit placement: a topoplan.ranks/v1 file (rank -> node, gpu)");
  cmd.add_option("--megatron-args", o.megatron_args,
                 "the Megatron-LM arguments a training script passes, as one string");
}

void add_plan_under_test_options(CLI::App& cmd, InputOptions& in, PlanOptions& plan,
                                 InferenceOptions* inf) {
  add_input_options(cmd, in);
  add_plan_options(cmd, plan);
  if (inf) add_inference_options(cmd, *inf, false);
}

void add_inference_options(CLI::App& cmd, InferenceOptions& o, bool search) {
  cmd.add_flag("--inference", o.enabled, "plan serving (prefill + decode) instead of training");
  cmd.add_option("--prompt-len", o.prompt_len, "(inference) prompt tokens")->capture_default_str();
  cmd.add_option("--output-len", o.output_len, "(inference) generated tokens")
      ->capture_default_str();
  cmd.add_option("--batch", o.batch, "(inference) concurrent sequences per replica")
      ->capture_default_str();
  cmd.add_option("--kv-dtype", o.kv_dtype,
                 "(inference) KV cache format: bf16, fp16, fp8 (default: --dtype)");
  cmd.add_option("--runtime", o.runtime,
                 "(inference) serving runtime, for its per-layer and per-collective decode costs: "
                 "tensorrt-llm, fastertransformer, fastertransformer-triton")
      ->capture_default_str();
  if (search) {
    cmd.add_option("--objective", o.objective, "(inference) latency or throughput")
        ->capture_default_str();
    cmd.add_option("--max-token-latency-ms", o.max_token_latency_ms,
                   "(inference) only plans with at most this time per token");
    cmd.add_option("--max-ttft-ms", o.max_ttft_ms,
                   "(inference) only plans with at most this time to first token");
  }
}

InferenceJob inference_job(const InputOptions& io, const InferenceOptions& o,
                           const std::optional<ImportedWorkload>& from) {
  InferenceJob j;
  constexpr std::int64_t kMax = kMaxJobCount;  // tokens and sequences, as training's
  auto count = [&](const char* flag, std::int64_t v, const std::optional<std::int64_t>& recorded) {
    if (!io.given(flag) && recorded) return *recorded;  // checked when the file was read
    if (v < 1 || v > kMax)
      throw_input(flag, "", fmt::format("expected a positive integer up to {}, got {}", kMax, v));
    return v;
  };
  const ImportedWorkload none;
  const ImportedWorkload& f = from ? *from : none;
  j.prompt_len = count("--prompt-len", o.prompt_len, f.prompt_len);
  j.output_len = count("--output-len", o.output_len, f.output_len);
  j.batch = count("--batch", o.batch, f.batch);
  j.weight_dtype = !io.given("--dtype") && f.weight_dtype
                       ? *f.weight_dtype
                       : parse_serving_dtype(io.dtype, "--dtype");
  // The KV cache follows the weights unless --kv-dtype, or the file with no --dtype, says.
  j.kv_dtype = !o.kv_dtype.empty()                  ? parse_serving_dtype(o.kv_dtype, "--kv-dtype")
               : f.kv_dtype && !io.given("--dtype") ? *f.kv_dtype
                                                    : j.weight_dtype;
  j.runtime =
      parse_runtime(!io.given("--runtime") && f.runtime ? *f.runtime : o.runtime, "--runtime");
  if (o.max_token_latency_ms < 0 || o.max_ttft_ms < 0)
    throw_input("--max-token-latency-ms/--max-ttft-ms", "", "expected a positive number of ms");
  return j;
}

void add_output_options(CLI::App& cmd, OutputOptions& o, const std::vector<std::string>& formats) {
  o.format = formats.front();
  std::string names;
  for (const auto& f : formats) names += (names.empty() ? "" : ", ") + f;
  cmd.add_option("--format", o.format, names)->capture_default_str()->check(CLI::IsMember(formats));
  cmd.add_option("-o,--output", o.path, "write to this file (atomically) instead of stdout");
}

Inputs load_inputs(const InputOptions& o, const ImportedPlan* from) {
  const std::string cluster_arg =
      !o.given("--cluster") && from && from->cluster ? *from->cluster : o.cluster;
  const std::string model_arg = !o.given("--model") && from && from->model ? *from->model : o.model;
  // A plan made from a cluster or model file carries it: read that, unless a flag overrides.
  const bool cluster_from_plan = !o.given("--cluster") && from && from->cluster_spec;
  ClusterSpec cs = cluster_from_plan
                       ? parse_cluster_with_presets(*from->cluster_spec, from->cluster_spec_source)
                       : load_cluster(cluster_arg, "--cluster");
  if (o.nodes > 0)
    cs.nodes = o.nodes;
  else if (from && from->nodes)
    cs.nodes = *from->nodes;
  if (!o.exclude.empty()) add_down_gpus(cs, o.exclude, "--exclude");
  ModelSpec ms = !o.given("--model") && from && from->model_spec
                     ? parse_model_json(*from->model_spec, from->model_spec_source)
                     : load_model(model_arg, "--model");
  JobSpec job;
  job.seq_len = !o.given("--seq-len") && from && from->seq_len ? *from->seq_len : o.seq_len;
  job.global_batch = !o.given("--global-batch") && from && from->global_batch ? *from->global_batch
                                                                              : o.global_batch;
  job.dtype =
      !o.given("--dtype") && from && from->dtype ? *from->dtype : parse_dtype(o.dtype, "--dtype");
  if (low_precision_linear(job.dtype) && o.inference)
    job.dtype = Dtype::bf16;  // training's, unused
  // A flag given wins, then what the plan file records, then the software stack.
  const SoftwareStack& st = stack_of(o);
  auto pick = [&](const char* flag, bool flag_value, const std::optional<bool>& recorded,
                  bool stack_value) {
    if (o.given(flag)) return flag_value;
    return recorded ? *recorded : stack_value;
  };
  const ImportedPlan none;
  const ImportedPlan& f = from ? *from : none;
  job.flash_attention = pick("--no-flash-attention", false, f.flash_attention, st.flash_attention);
  job.tp_comm_overlap = pick("--tp-overlap", true, f.tp_comm_overlap, st.tp_comm_overlap);
  job.ep_comm_overlap = pick("--ep-overlap", true, f.ep_comm_overlap, false);
  job.grad_reduce_bf16 = pick("--grad-reduce-bf16", true, f.grad_reduce_bf16, false);
  job.grad_accumulation_pass =
      pick("--grad-accumulation-pass", true, f.grad_accumulation_pass, false);
  job.fp8_param_gather = pick("--fp8-param-gather", true, f.fp8_param_gather, false);
  job.fp4_param_gather = pick("--fp4-param-gather", true, f.fp4_param_gather, false);
  job.cuda_graphs = pick("--cuda-graphs", true, f.cuda_graphs, false);
  job.fp8_attention = pick("--fp8-attention", true, f.fp8_attention, false);
  set_megatron_tuning(o, f, job);
  // A pair: the "--no-" flag wins outright, then as pick().
  auto pick_pair = [&](const char* on, const char* off, const std::optional<bool>& recorded,
                       bool stack_value) {
    return o.given(off) ? false : pick(on, true, recorded, stack_value);
  };
  job.fa2_attention =
      pick_pair("--fa2-attention", "--no-fa2-attention", f.fa2_attention, st.fa2_attention);
  job.fp8_tp_all_gather = pick_pair("--fp8-tp-all-gather", "--no-fp8-tp-all-gather",
                                    f.fp8_tp_all_gather, st.fp8_tp_all_gather);
  job.eager = pick("--eager", true, f.eager, false);
  job.overlap_grad_reduce =
      pick("--no-overlap-grad-reduce", false, f.overlap_grad_reduce, st.overlap_grad_reduce);
  job.overlap_p2p = pick("--no-overlap-p2p", false, f.overlap_p2p, st.overlap_p2p);
  job.overlap_param_gather = pick_pair("--overlap-param-gather", "--no-overlap-param-gather",
                                       f.overlap_param_gather, st.overlap_param_gather);
  // What the search may trade for memory: the stack's, unless a --no- flag says otherwise.
  job.activation_offload = !o.given("--no-activation-offload") && st.activation_offload;
  job.recompute_module_search = !o.given("--no-recompute-module-search") && st.recompute_modules;
  job.flexible_pipeline_layout = st.flexible_pipeline_layout;
  job.gpus = o.gpus;
  if (!(o.memory_headroom >= 0 && o.memory_headroom <= 0.9))
    throw_input("--memory-headroom", "",
                fmt::format("expected a fraction from 0 to 0.9, got {}", o.memory_headroom));
  job.memory_headroom = o.memory_headroom;
  with_flag_names([&] { validate(job); });
  apply_mtp_layers(ms, job, o.given("--mtp-layers") ? "--mtp-layers" : "mtp_layers");
  Calibration cal;
  if (!o.calibration.empty()) apply_calibration_file(o.calibration, cal);
  Inputs in{Cluster(cs, cluster_arg), Model(ms, model_arg), job, cal, cluster_arg, model_arg};
  if (!o.inference) with_flag_names([&] { validate(job, in.cluster.gpu()); });
  spdlog::debug("cluster {}: {} GPUs in {} tiers; model {}: {} parameters", cs.name,
                in.cluster.gpu_count(), in.cluster.tier_count(), ms.name,
                in.model.counts.total_params);
  return in;
}

std::string fields_as_flags(const std::string& msg) {
  const auto colon = msg.find(": ");
  if (colon == std::string::npos) return msg;
  std::string flags;
  for (char ch : msg.substr(0, colon)) {
    if (!(std::islower(static_cast<unsigned char>(ch)) ||
          std::isdigit(static_cast<unsigned char>(ch)) || ch == '_' || ch == '/'))
      return msg;  // not a field list (a file name, a flag already)
    if (flags.empty() || flags.back() == '/') flags += "--";
    flags += ch == '_' ? '-' : ch;
  }
  return flags + msg.substr(colon);
}

void reject_unused_flags(const InputOptions& io, bool inference) {
  static constexpr const char* kTrainingOnly[] = {"--seq-len",
                                                  "--global-batch",
                                                  "--no-flash-attention",
                                                  "--tp-overlap",
                                                  "--ep-overlap",
                                                  "--expert-tp",
                                                  "--grad-reduce-bf16",
                                                  "--grad-accumulation-pass",
                                                  "--fp8-param-gather",
                                                  "--fp4-param-gather",
                                                  "--fp8-attention",
                                                  "--cuda-graphs",
                                                  "--moe-dispatcher",
                                                  "--dp-bucket-params",
                                                  "--recompute-modules",
                                                  "--cp-comm-type",
                                                  "--mtp-layers",
                                                  "--fa2-attention",
                                                  "--no-fa2-attention",
                                                  "--fp8-tp-all-gather",
                                                  "--no-fp8-tp-all-gather",
                                                  "--eager",
                                                  "--no-overlap-grad-reduce",
                                                  "--no-overlap-p2p",
                                                  "--overlap-param-gather",
                                                  "--no-overlap-param-gather",
                                                  "--no-activation-offload",
                                                  "--no-recompute-module-search",
                                                  "--gpus",
                                                  "--memory-headroom",
                                                  "--stack",
                                                  "--micro-batch",
                                                  "--vpp",
                                                  "--cp",
                                                  "--zero",
                                                  "--recompute",
                                                  "--recompute-layers",
                                                  "--offload-layers",
                                                  "--sequence-parallel",
                                                  "--no-sequence-parallel",
                                                  "--first-stage-layers",
                                                  "--last-stage-layers",
                                                  "--stage-layers",
                                                  "--search-split",
                                                  "--max-cp",
                                                  "--variants"};
  static constexpr const char* kServingOnly[] = {
      "--prompt-len", "--output-len",           "--batch",      "--kv-dtype", "--runtime",
      "--objective",  "--max-token-latency-ms", "--max-ttft-ms"};
  if (inference) {
    for (const char* f : kTrainingOnly)
      if (io.given(f))
        throw_input(f, "",
                    "applies to training only; --inference plans every GPU of the cluster "
                    "for serving (set its size with --nodes)");
  } else {
    for (const char* f : kServingOnly)
      if (io.given(f)) throw_input(f, "", "applies with --inference only");
  }
}

const SoftwareStack& stack_of(const InputOptions& o) {
  return find_stack(o.stack.empty() ? software_stacks().front().name : o.stack, "--stack");
}

void apply_stack_choices(const InputOptions& o, const ChoiceOptions& given, int& zero,
                         std::optional<bool>& sequence_parallel) {
  if (o.stack.empty()) return;  // the default stack leaves them to the search or the defaults
  const SoftwareStack& st = stack_of(o);
  if (given.zero < 0 && st.zero >= 0) zero = st.zero;
  if (!given.sp_on && !given.sp_off && st.sequence_parallel)
    sequence_parallel = st.sequence_parallel;
}

void throw_plan_error(PlanError e, const Resolved& r) {
  throw InputError(fields_as_flags(describe(e, r.in.cluster, r.in.model, r.in.job, r.plan)));
}

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> stop{false};
  return stop;
}

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    return;
  }
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path tmp = target;
  tmp += fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_input(path, "", "cannot write file");
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw_input(path, "", "cannot write file");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw_input(path, "", "cannot replace file: " + ec.message());
  }
}

}  // namespace topoplan::cli
