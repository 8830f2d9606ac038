// Resolves the plan under test from flags, a plan or rank file, or Megatron-LM arguments.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <utility>
#include <vector>

#include "cli/common.hpp"
#include "topoplan/error.hpp"
#include "topoplan/fingerprint.hpp"
#include "topoplan/import/megatron_args.hpp"
#include "topoplan/import/plan_json.hpp"
#include "topoplan/placement.hpp"
#include "topoplan/plan_check.hpp"
#include "topoplan/rank_table.hpp"

namespace topoplan::cli {
namespace {

/// The plan flags given on the command line, by name (an imported plan excludes them all).
std::vector<std::string> given_plan_flags(const PlanOptions& po) {
  const std::pair<bool, const char*> flags[] = {{po.tp > 0, "--tp"},
                                                {po.cp > 0, "--cp"},
                                                {po.ep > 0, "--ep"},
                                                {po.pp > 0, "--pp"},
                                                {po.dp > 0, "--dp"},
                                                {po.micro_batch > 0, "--micro-batch"},
                                                {po.vpp > 0, "--vpp"},
                                                {!po.order.empty(), "--order"},
                                                {po.choice.zero >= 0, "--zero"},
                                                {!po.choice.recompute.empty(), "--recompute"},
                                                {po.choice.sp_on, "--sequence-parallel"},
                                                {po.choice.sp_off, "--no-sequence-parallel"},
                                                {po.first_stage_layers > 0, "--first-stage-layers"},
                                                {po.last_stage_layers > 0, "--last-stage-layers"},
                                                {!po.stage_layers.empty(), "--stage-layers"},
                                                {po.recompute_layers > 0, "--recompute-layers"},
                                                {po.offload_layers > 0, "--offload-layers"},
                                                {po.expert_tp > 0, "--expert-tp"}};
  std::vector<std::string> out;
  for (const auto& [given, name] : flags)
    if (given) out.emplace_back(name);
  return out;
}

void check_fingerprint(const std::string& file, const char* what,
                       const std::optional<std::string>& recorded, const std::string& now) {
  if (recorded && *recorded != now)
    throw_input(file, fmt::format("fingerprints.{}", what),
                fmt::format("the placement was exported for a different {} ({}; these inputs give "
                            "{}): pass the same --cluster/--nodes/--model/--seq-len/--global-batch",
                            what, *recorded, now));
}

/// --stage-layers 12,12,28,28: positive counts (the pipeline degree is checked with the plan).
std::vector<std::int64_t> parse_stage_layers(const std::string& text) {
  std::vector<std::int64_t> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const bool digits = !item.empty() && item.size() <= 7 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoll(item) < 1)
      throw_input("--stage-layers", "",
                  fmt::format("expected layer counts from 1, comma-separated, got '{}'", item));
    out.push_back(std::stoll(item));
    start = end + 1;
  }
  return out;
}

/// The plan the flags give (dp 0 when not given: the GPUs decide).
/// Counts are positive here: require_positive_counts checked them as flags.
Plan plan_from_flags(const PlanOptions& po) {
  Plan p;
  p[Dim::tp] = po.tp ? po.tp : 1;
  p[Dim::pp] = po.pp ? po.pp : 1;
  p[Dim::cp] = po.cp ? po.cp : 1;
  p[Dim::ep] = po.ep ? po.ep : 1;
  p[Dim::dp] = po.dp;
  p.micro_batch = po.micro_batch ? po.micro_batch : 1;
  p.vpp = po.vpp ? po.vpp : 1;
  if (!po.order.empty()) p.order = parse_order(po.order, "--order");
  if (po.choice.zero >= 0) p.zero = po.choice.zero;
  if (po.choice.zero < -1) p.zero = po.choice.zero;  // reported by check_plan
  if (!po.choice.recompute.empty())
    p.recompute = parse_recompute(po.choice.recompute, "--recompute");
  p.sequence_parallel = po.choice.sp_on;
  if (po.recompute_layers > 0 && p.recompute != Recompute::full)
    throw_input("--recompute-layers", "",
                "expected a positive number of layers, with --recompute full");
  p.recompute_layers = po.recompute_layers;
  p.offload_layers = po.offload_layers;
  p.expert_tp = po.expert_tp;
  p.first_stage_layers = po.first_stage_layers;
  p.last_stage_layers = po.last_stage_layers;
  p.stage_layers = parse_stage_layers(po.stage_layers);
  return p;
}

/// The plan from --plan, --ranks or --megatron-args (at most one), named by `source`.
std::optional<ImportedPlan> imported_plan(const PlanOptions& po, std::string& source) {
  const int sources = !po.plan_file.empty() + !po.ranks_file.empty() + !po.megatron_args.empty();
  if (sources > 1) throw_input("--plan/--ranks/--megatron-args", "", "give at most one of them");
  if (!po.plan_file.empty()) {
    source = po.plan_file;
    return load_plan_file(source);
  }
  if (!po.ranks_file.empty()) {
    source = po.ranks_file;
    return load_ranks_file(source);
  }
  if (!po.megatron_args.empty()) {
    source = "--megatron-args";
    return parse_megatron_args(po.megatron_args, source);
  }
  return std::nullopt;
}

std::optional<ImportedWorkload> serving_of(const std::optional<ImportedPlan>& imp) {
  return imp ? imp->serving : std::nullopt;
}

}  // namespace

Resolved resolve_plan(const InputOptions& io, const PlanOptions& po) {
  std::string source;
  const std::optional<ImportedPlan> imp = imported_plan(po, source);
  if (const auto flags = given_plan_flags(po); imp && !flags.empty())
    throw_input(source, "",
                fmt::format("the plan comes from here: drop {}", fmt::join(flags, ", ")));

  if (imp && imp->serving && !io.inference)
    throw_input(source, "schema",
                "a serving plan (topoplan.inference/v1): evaluate and check read it with "
                "--inference");
  Inputs in = load_inputs(io, imp ? &*imp : nullptr);
  if (imp) check_against_model(*imp, in.model.spec, source);
  if (in.job.gpus > in.cluster.gpu_count())
    throw_input(
        "--gpus", "",
        fmt::format("{} GPUs, but the cluster has {}", in.job.gpus, in.cluster.gpu_count()));
  // With GPUs down a plan may use fewer: by default as many as its TP groups fit whole.
  const bool down = in.cluster.has_down_gpus();
  std::int64_t gpus = in.job.gpus > 0 ? in.job.gpus : in.cluster.gpu_count();
  Plan p = imp ? imp->plan : plan_from_flags(po);
  // The stack decides; Megatron-LM arguments with a layout string bring their own.
  p.flexible_layout = in.job.flexible_pipeline_layout || p.flexible_layout;
  if (!imp) {
    std::optional<bool> sp;
    apply_stack_choices(io, po.choice, p.zero, sp);
    if (sp) p.sequence_parallel = *sp && p[Dim::tp] > 1;
  }
  const bool dp_given = imp ? imp->dp_given : po.dp > 0;
  if (imp) apply_layer_choices(*imp, in.model.spec.layers, p);
  if (imp && imp->layers_per_virtual_stage) {
    const std::int64_t per_rank = in.model.spec.layers / p[Dim::pp];
    if (per_rank % *imp->layers_per_virtual_stage != 0)
      throw_input(source, "--num-layers-per-virtual-pipeline-stage",
                  fmt::format("{} does not divide the {} layers per pipeline rank",
                              *imp->layers_per_virtual_stage, per_rank));
    p.vpp = static_cast<int>(per_rank / *imp->layers_per_virtual_stage);
  }
  // Serving uses every GPU: a serving plan's degrees must cover the cluster it is read on.
  if (imp && imp->serving && p.world() != gpus)
    throw_input(source, "dp",
                fmt::format("tp {} x pp {} x dp {} = {} GPUs, but the cluster has {} (serving "
                            "uses every GPU; --nodes sets the cluster's size)",
                            p[Dim::tp], p[Dim::pp], p[Dim::dp], p.world(), gpus));
  // A plan file made on part of the cluster (--gpus N) reads back on that part.
  if (imp && dp_given && in.job.gpus == 0 && !down && p.world() < in.cluster.gpu_count()) {
    in.job.gpus = static_cast<int>(p.world());
    gpus = p.world();
  }
  if (!dp_given) {
    const std::int64_t rest = static_cast<std::int64_t>(p[Dim::tp]) * p[Dim::cp] * p[Dim::pp];
    if (down && in.job.gpus == 0) gpus = in.cluster.tp_capacity(p[Dim::tp]) / rest * rest;
    if (gpus % rest != 0 || gpus == 0)
      throw_input(imp ? source : "--tp/--cp/--pp", "",
                  fmt::format("tp {} x cp {} x pp {} does not divide the cluster's {} GPUs",
                              p[Dim::tp], p[Dim::cp], p[Dim::pp], gpus));
    p[Dim::dp] = static_cast<int>(gpus / rest);
  }

  Mapping mapping = Mapping::from_order(p);
  if (imp && !imp->node_of_rank.empty()) {
    check_fingerprint(source, "cluster", imp->cluster_fingerprint, fingerprint(in.cluster));
    check_fingerprint(source, "model", imp->model_fingerprint, fingerprint(in.model));
    check_fingerprint(source, "job", imp->job_fingerprint, fingerprint(in.job));
    if (p.world() != gpus && !down)
      throw_input(source, "world_size",
                  fmt::format("{} ranks, but the cluster has {} GPUs", p.world(), gpus));
    std::vector<int> devices =
        devices_of_ranks(in.cluster, imp->node_of_rank, imp->gpu_of_rank, source);
    mapping = Mapping::with_devices(p, std::move(devices));
  } else if (down && check_plan(in.cluster, in.model, in.job, p) == PlanError::none) {
    // Ranks go around the GPUs that are down: the placement search decides where.
    Placement pl = place(in.cluster, in.model, in.job, p, in.cal);
    p = pl.plan;
    mapping = Mapping::with_devices(p, std::move(pl.devices));
    return Resolved{std::move(in), p, std::move(mapping), pl.stats, serving_of(imp)};
  }
  return Resolved{std::move(in), p, std::move(mapping), std::nullopt, serving_of(imp)};
}

}  // namespace topoplan::cli
