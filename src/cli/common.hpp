#pragma once
/// Flags shared by the subcommands and the steps they share: load inputs, resolve the plan under
/// test, write output. No modelling here.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "topoplan/calibration.hpp"
#include "topoplan/context.hpp"
#include "topoplan/cost_model.hpp"
#include "topoplan/error.hpp"
#include "topoplan/import/plan_source.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/placement.hpp"
#include "topoplan/stack.hpp"

namespace topoplan::cli {

/// Attaches the one rule for count flags (--nodes, degrees, sizes, lengths, --threads, --top):
/// a whole number from 1 up to a physical bound (tokens and sequences: 2^24; degrees, servers and
/// threads: 2^20, the GPUs a cluster may have), checked on the text before any conversion, so
/// `--tp 0`, `--tp -2` and `--seq-len 4k` all give "<flag>: expected a positive integer ...".
void require_positive_counts(CLI::App& cmd);

/// A flag parse error rephrased in topoplan's form ("--flag: expected ..., got ...").
[[nodiscard]] std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& e);

struct InputOptions {
  std::string cluster = "dgx-h100";
  int nodes = 0;  ///< 0: the preset's own
  std::string model = "llama3-70b";
  std::int64_t seq_len = 4096;
  std::int64_t global_batch = 512;
  std::string dtype = "bf16";
  bool no_flash_attention = false;
  bool tp_overlap = false;
  bool ep_overlap = false;
  bool grad_reduce_bf16 = false;
  bool grad_accumulation_pass = false;
  bool fp8_param_gather = false;
  bool fp4_param_gather = false;
  bool cuda_graphs = false;
  bool fp8_attention = false;
  std::string moe_dispatcher = "alltoall";
  std::int64_t dp_bucket_params = 0;  ///< --dp-bucket-params (0: Megatron-core's default)
  std::string recompute_modules;      ///< --recompute-modules, comma-separated
  std::string cp_comm_type = "p2p";   ///< --cp-comm-type
  int mtp_layers = -1;                ///< --mtp-layers (-1: the model's own)
  bool fa2_attention = false;
  bool no_fa2_attention = false;
  bool fp8_tp_all_gather = false;
  bool no_fp8_tp_all_gather = false;
  bool eager = false;
  bool no_overlap_grad_reduce = false;
  bool no_overlap_p2p = false;
  bool no_activation_offload = false;
  bool no_recompute_module_search = false;
  bool overlap_param_gather = false;
  bool no_overlap_param_gather = false;
  std::string calibration;  ///< --calibration FILE
  std::string stack;        ///< --stack NAME (empty: megatron-core)
  int gpus = 0;             ///< --gpus: use this many GPUs (0: all)
  std::string exclude;      ///< --exclude: GPUs that are down
  double memory_headroom = 0;
  bool inference = false;   ///< set by commands running --inference (fp8 weights allowed)
  CLI::App* cmd = nullptr;  ///< to tell flags given from defaults
  [[nodiscard]] bool given(const char* flag) const {
    const CLI::Option* o = cmd ? cmd->get_option_no_throw(flag) : nullptr;
    return o && o->count() > 0;
  }
};

/// ZeRO stage, recomputation and sequence parallelism: given for evaluate, searched by plan
/// unless fixed.
struct ChoiceOptions {
  int zero = -1;          ///< -1: not given
  std::string recompute;  ///< empty: not given
  bool sp_on = false;
  bool sp_off = false;
};

/// One plan, for evaluate, check and export: flags, or a file, or Megatron-LM arguments.
struct PlanOptions {
  int tp = 0, cp = 0, ep = 0, pp = 0, dp = 0, micro_batch = 0, vpp = 0;  ///< 0: not given
  std::int64_t first_stage_layers = 0, last_stage_layers = 0;            ///< 0: the default split
  std::string stage_layers;  ///< --stage-layers 12,12,28,28 (empty: not given)
  int recompute_layers = 0;  ///< with --recompute full: layers per stage (0: all)
  int offload_layers = 0;    ///< --offload-layers: activation offloading (0: none)
  int expert_tp = 0;         ///< --expert-tp (0: as tp)
  std::string order;
  ChoiceOptions choice;
  std::string plan_file;      ///< --plan: topoplan.plan/v1, topoplan.search/v1 or ranks
  std::string ranks_file;     ///< --ranks: topoplan.ranks/v1, an explicit placement
  std::string megatron_args;  ///< --megatron-args "..."
};

/// --inference and its workload (plan, evaluate, check).
struct InferenceOptions {
  bool enabled = false;
  std::int64_t prompt_len = 1024;
  std::int64_t output_len = 256;
  std::int64_t batch = 1;
  std::string kv_dtype;  ///< empty: as --dtype
  std::string runtime = "tensorrt-llm";
  std::string objective = "latency";
  double max_token_latency_ms = 0;
  double max_ttft_ms = 0;
};

struct OutputOptions {
  std::string format = "table";
  std::string path;  ///< empty or "-": stdout
};

/// Everything loaded and validated from InputOptions.
struct Inputs {
  Cluster cluster;
  Model model;
  JobSpec job;
  Calibration cal;
  std::string cluster_arg;  ///< as named by the user (preset or path)
  std::string model_arg;
  /// The training inputs as the library takes them.
  [[nodiscard]] RunContext run() const { return {cluster, model, job, cal}; }
};

/// A plan under test with its placement.
struct Resolved {
  Inputs in;
  Plan plan;
  Mapping mapping;
  /// Set when the placement search placed the plan (GPUs down).
  std::optional<PlacementStats> placement = std::nullopt;
  /// A serving plan file's workload (--plan with a topoplan.inference/v1 file).
  std::optional<ImportedWorkload> serving = std::nullopt;
};

/// Set by SIGINT/SIGTERM (main.cpp): a running search stops and nothing is written.
[[nodiscard]] std::atomic<bool>& stop_requested();

void add_input_options(CLI::App& cmd, InputOptions& o);
/// `searched`: the help says the default is searched (plan) rather than a fixed value.
void add_choice_options(CLI::App& cmd, ChoiceOptions& o, bool searched);
void add_plan_options(CLI::App& cmd, PlanOptions& o);
/// The options of a command that takes one plan under test (evaluate, check, export): inputs,
/// the plan, and the serving workload when `inf` is given.
void add_plan_under_test_options(CLI::App& cmd, InputOptions& in, PlanOptions& plan,
                                 InferenceOptions* inf);
/// `search`: also the objective and the latency bounds (plan).
void add_inference_options(CLI::App& cmd, InferenceOptions& o, bool search);
/// The inference workload; the weights' format is --dtype (bf16, fp16 or fp8). A flag given wins,
/// then what a serving plan file records (`from`), then the flag's default.
[[nodiscard]] InferenceJob inference_job(const InputOptions& io, const InferenceOptions& o,
                                         const std::optional<ImportedWorkload>& from = {});
/// `formats` lists the accepted --format values; the first is the default.
void add_output_options(CLI::App& cmd, OutputOptions& o, const std::vector<std::string>& formats);

[[nodiscard]] Inputs load_inputs(const InputOptions& o, const ImportedPlan* from = nullptr);
/// Loads inputs (defaults from the plan's source where flags leave them open) and builds the
/// plan and its mapping. InputError for conflicting or invalid sources.
[[nodiscard]] Resolved resolve_plan(const InputOptions& io, const PlanOptions& po);
/// "tp/pp/dp: ..." -> "--tp/--pp/--dp: ..." (underscores as dashes).
[[nodiscard]] std::string fields_as_flags(const std::string& message);
/// Runs a library call whose input errors name option fields ("tp: ...", "micro_batch: ...")
/// and shows those fields as the flags that set them ("--tp: ...", "--micro-batch: ...").
template <class F>
auto with_flag_names(F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const InputError& e) {
    throw InputError(fields_as_flags(e.what()));
  }
}
/// Every flag applies or is refused: InputError for a training-only flag with --inference
/// (`--seq-len`, `--zero`, `--gpus`, ...) and for a serving-only flag without it.
void reject_unused_flags(const InputOptions& io, bool inference);
/// The --stack named (or the default one).
[[nodiscard]] const SoftwareStack& stack_of(const InputOptions& o);
/// With --stack given: its ZeRO stage and sequence parallelism where the flags leave them open.
void apply_stack_choices(const InputOptions& o, const ChoiceOptions& given, int& zero,
                         std::optional<bool>& sequence_parallel);
/// InputError for a plan that cannot run: the core's explanation with its fields shown as the
/// flags that set them ("tp/pp/dp: ..." -> "--tp/--pp/--dp: ...").
[[noreturn]] void throw_plan_error(PlanError e, const Resolved& r);
/// Writes to stdout, or to a file through a temporary file and a rename.
void write_output(const std::string& path, const std::string& text);

/// A subcommand: registers its flags on `cmd` and returns what runs it (exit code).
using Runner = std::function<int()>;
Runner register_plan(CLI::App& cmd);
Runner register_evaluate(CLI::App& cmd);
Runner register_check(CLI::App& cmd);
Runner register_export(CLI::App& cmd);
Runner register_presets(CLI::App& cmd);
Runner register_calibrate(CLI::App& cmd);
Runner register_model(CLI::App& cmd);
Runner register_import(CLI::App& cmd);
Runner register_validate(CLI::App& cmd);
Runner register_schema(CLI::App& cmd);

}  // namespace topoplan::cli
