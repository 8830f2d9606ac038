#include "topoplan/calibration_runs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>

#include "detail/json_input.hpp"
#include "detail/json_output.hpp"
#include "detail/names.hpp"
#include "topoplan/error.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/search.hpp"
#include "topoplan/stack.hpp"

namespace topoplan {
namespace {

constexpr const char* kRunsFile = "calibration/runs.json";
constexpr const char* kRunsSchema = "topoplan.calibration-runs/v1";

RunCorpus embedded_runs() {
  for (const auto& f : embedded_presets())
    if (std::string(f.path) == kRunsFile) return {f.text, std::string("configs/") + kRunsFile};
  throw std::runtime_error("calibration runs are not compiled in");
}

/// A run's cluster: the preset it names, at its node count (and NICs per server, if it says).
ClusterSpec run_cluster_spec(const detail::JsonCursor& r) {
  ClusterSpec cs = load_cluster(r.string("cluster"), r.source());
  cs.nodes = static_cast<int>(r.positive_int("nodes"));
  if (r.has("server_nics")) cs.nics_per_server = static_cast<int>(r.positive_int("server_nics"));
  // GPUs the run used in each server (NVLink domain): a Slurm segment of whole trays in each
  // rack, the rest of the rack left out (as a cluster file's "servers": [{"gpus": N}]).
  if (r.has("server_gpus")) {
    const int per = cs.tiers.empty() ? 0 : cs.tiers[0].fanout;
    const auto n = r.positive_int("server_gpus");
    if (n > per)
      r.at("server_gpus")
          .fail_here(fmt::format("expected at most the {} GPUs a {} server holds, got {}", per,
                                 cs.name, n));
    cs.server_groups = {ServerGroup{cs.nodes, cs.gpu, static_cast<int>(n), false}};
  }
  return cs;
}

void predict_collective(const detail::JsonCursor& r, const Cluster& c, const Calibration& cal,
                        CalibrationResult& out) {
  const Fabric f = make_fabric(c, cal);
  std::vector<int> all(static_cast<std::size_t>(c.gpu_count()));
  for (int i = 0; i < c.gpu_count(); ++i) all[i] = i;
  const GroupShape g = shape_of_devices(c, all);
  const double bytes = r.positive("bytes");
  const std::string alg = r.string("algorithm");
  CollectiveCost cost = alg == "ring"   ? ring_all_reduce(f, g, bytes)
                        : alg == "nvls" ? nvls_all_reduce(f, g, bytes)
                                        : all_reduce(f, g, bytes);
  const double n = g.size;
  out.predicted =
      out.metric == "busbw_GBps" ? bytes / cost.time * 2 * (n - 1) / n / 1e9 : cost.time * 1e6;
  out.note = fmt::format("{} GPUs, {} B, {}", g.size, bytes, to_string(cost.algorithm));
}

/// A run's model: a preset name ("llama3-70b") or the config.json object itself.
Model run_model(const detail::JsonCursor& r) {
  if (r.at("model").node().is_string())
    return Model(load_model(r.string("model"), r.source()), r.source());
  return Model(parse_model_json(r.at("model").node().dump(), r.source() + ": model"), r.source());
}

void predict_inference(const detail::JsonCursor& r, const Cluster& c, const Model& m,
                       const Calibration& cal, CalibrationResult& out, RunExplanation* x) {
  auto w = r.at("inference");
  InferenceJob j;
  j.prompt_len = w.positive_int("prompt_len");
  j.output_len = w.positive_int("output_len");
  j.batch = w.positive_int("batch");
  j.weight_dtype = parse_serving_dtype(w.string("weight_dtype"), r.source());
  j.kv_dtype =
      w.has("kv_dtype") ? parse_serving_dtype(w.string("kv_dtype"), r.source()) : j.weight_dtype;
  if (w.has("runtime")) j.runtime = parse_runtime(w.string("runtime"), r.source());
  auto pc = r.at("plan");
  Plan p;
  p[Dim::tp] = static_cast<int>(pc.positive_int("tp"));
  p[Dim::pp] = static_cast<int>(pc.positive_int("pp"));
  p[Dim::dp] = c.gpu_count() / (p[Dim::tp] * p[Dim::pp]);
  const InferenceEval e = evaluate_inference(c, m, j, p, Mapping::from_order(p), cal);
  out.predicted = out.metric == "ttft_ms" ? e.ttft * 1e3 : e.end_to_end * 1e3;
  out.note = fmt::format("token {:.2f} ms: memory {:.2f}, overhead {:.2f}, tp {:.2f}",
                         e.token_latency * 1e3, e.decode.memory * 1e3, e.decode.overhead * 1e3,
                         e.decode.tp * 1e3);
  if (x) {
    x->cluster = c;
    x->serving = j;
    x->plan = p;
    x->serving_eval = e;
  }
}

/// A training row's job: the keys it gives, the rest as its software stack sets them (as --stack
/// does).
JobSpec run_job(const detail::JsonCursor& jc, const SoftwareStack& st, const std::string& source) {
  JobSpec j;
  j.seq_len = jc.positive_int("seq_len");
  j.global_batch = jc.positive_int("global_batch");
  j.dtype = parse_dtype(jc.string("dtype"), source);
  j.flash_attention = jc.boolean_or("flash_attention", st.flash_attention);
  j.overlap_grad_reduce = jc.boolean_or("overlap_grad_reduce", st.overlap_grad_reduce);
  j.overlap_param_gather =
      jc.boolean_or("overlap_param_gather", jc.has("stack") && st.overlap_param_gather);
  j.tp_comm_overlap = jc.boolean_or("tp_comm_overlap", st.tp_comm_overlap);
  j.fp8_tp_all_gather = jc.boolean_or("fp8_tp_all_gather", st.fp8_tp_all_gather);
  j.ep_comm_overlap = jc.boolean_or("ep_comm_overlap", false);
  j.fp8_attention = jc.boolean_or("fp8_attention", false);
  j.grad_reduce_bf16 = jc.boolean_or("grad_reduce_bf16", false);
  j.grad_accumulation_pass = jc.boolean_or("grad_accumulation_pass", false);
  j.fp8_param_gather = jc.boolean_or("fp8_param_gather", false);
  j.fp4_param_gather = jc.boolean_or("fp4_param_gather", false);
  j.cuda_graphs = jc.boolean_or("cuda_graphs", false);
  if (jc.has("moe_dispatcher"))
    j.moe_dispatcher = parse_moe_dispatcher(jc.string("moe_dispatcher"),
                                            jc.source() + ": " + jc.path_of("moe_dispatcher"));
  if (jc.has("dp_bucket_params")) j.dp_bucket_params = jc.positive_int("dp_bucket_params");
  if (jc.has("recompute_modules"))
    j.recompute_modules = parse_recompute_modules(
        jc.string("recompute_modules"), jc.source() + ": " + jc.path_of("recompute_modules"));
  if (jc.has("cp_comm_type"))
    j.cp_comm =
        parse_cp_comm(jc.string("cp_comm_type"), jc.source() + ": " + jc.path_of("cp_comm_type"));
  if (jc.has("mtp_layers"))
    j.mtp_layers = static_cast<int>(jc.int_at_least_or("mtp_layers", -1, -1));
  j.fa2_attention = jc.boolean_or("fa2_attention", st.fa2_attention);
  j.eager = jc.boolean_or("eager", false);
  // Runs on part of the cluster (8 of an NVL72 rack's 72 GPUs): "gpus", as --gpus.
  if (jc.has("gpus")) j.gpus = static_cast<int>(jc.positive_int("gpus"));
  j.overlap_p2p = jc.boolean_or("overlap_p2p", st.overlap_p2p);
  j.flexible_pipeline_layout =
      jc.boolean_or("flexible_pipeline_layout", jc.has("stack") && st.flexible_pipeline_layout);
  j.activation_offload =
      jc.boolean_or("activation_offload", jc.has("stack") && st.activation_offload);
  j.recompute_module_search =
      jc.boolean_or("recompute_module_search", jc.has("stack") && st.recompute_modules);
  return j;
}

void predict_training(const detail::JsonCursor& r, const Cluster& c, const Model& model,
                      const Calibration& cal, CalibrationResult& out, RunExplanation* x) {
  auto jc = r.at("job");
  const SoftwareStack& st =
      find_stack(jc.opt_string("stack").value_or("megatron-core"), r.source());
  JobSpec j = run_job(jc, st, r.source());
  validate(j, c.gpu());
  // The multi-token-prediction modules the run trains (job mtp_layers; else the model's own).
  ModelSpec trained = model.spec;
  apply_mtp_layers(trained, j, jc.source() + ": " + jc.path_of("mtp_layers"));
  std::optional<Model> other;
  if (trained.mtp_layers != model.spec.mtp_layers) other.emplace(trained, r.source());
  const Model& m = other ? *other : model;
  auto pc = r.at("plan");
  SearchOptions opt;
  opt.fixed[Dim::tp] = static_cast<int>(pc.positive_int("tp"));
  opt.fixed[Dim::pp] = static_cast<int>(pc.positive_int("pp"));
  opt.fixed[Dim::dp] = static_cast<int>(pc.positive_int("dp"));
  // A run states its rank order when it is not Megatron's default (--use-tp-pp-dp-mapping).
  opt.order = pc.has("order") ? parse_order(pc.string("order"), r.source() + ": plan.order")
                              : kDefaultOrder;
  if (pc.has("cp")) opt.fixed[Dim::cp] = static_cast<int>(pc.positive_int("cp"));
  if (pc.has("ep")) opt.fixed[Dim::ep] = static_cast<int>(pc.positive_int("ep"));
  // A published run states a folded expert TP; unstated, it ran Megatron's default (as tp).
  opt.expert_tp =
      pc.has("expert_tp") ? static_cast<int>(pc.positive_int("expert_tp")) : kExpertTpAsTp;
  opt.zero =
      static_cast<int>(pc.int_at_least_or("zero", 0, jc.has("stack") ? std::max(st.zero, 0) : 0));
  if (pc.string("recompute") != "search")
    opt.recompute = parse_recompute(pc.string("recompute"), r.source());
  opt.sequence_parallel =
      pc.boolean_or("sequence_parallel", jc.has("stack") && st.sequence_parallel.value_or(true));
  auto fixed_or_search = [&](const char* key) {
    const auto& v = pc.at(key).node();
    return v.is_string() ? 0 : static_cast<int>(pc.positive_int(key));
  };
  opt.micro_batch = fixed_or_search("micro_batch");
  opt.vpp = fixed_or_search("vpp");
  opt.first_stage_layers = pc.int_at_least_or("first_stage_layers", 1, 0);
  opt.last_stage_layers = pc.int_at_least_or("last_stage_layers", 1, 0);
  opt.top_k = 1;
  // On a cluster with GPUs left out (server_gpus) the search places its plan; a published run
  // did not search placements (its ranks went over the GPUs it was given), so no improvement
  // moves: the best order string or construction over those GPUs. No row's prediction changed
  // with the moves, and they were most of a fit's time.
  opt.placement.moves = 0;
  SearchResult res = search(c, m, j, cal, opt);
  const Candidate* best =
      res.top.empty() ? (res.closest_unfit ? &*res.closest_unfit : nullptr) : &res.top.front();
  if (!best)
    pc.fail_here(fmt::format("no plan with these settings runs {} on {} GPUs", m.spec.name,
                             j.gpus > 0 ? j.gpus : c.gpu_count()));
  const Evaluation& e = best->eval;
  const double tokens = static_cast<double>(j.global_batch) * static_cast<double>(j.seq_len);
  const double gpus = static_cast<double>(best->plan.world());  // those the run used
  if (out.metric == "iteration_time_s")
    out.predicted = e.step_time;
  else if (out.metric == "tokens_per_s_per_gpu")
    out.predicted = tokens / e.step_time / gpus;
  else if (out.metric == "mfu")
    out.predicted = e.mfu;
  else
    out.predicted =
        tokens * hardware_flops_per_token(m, static_cast<double>(j.seq_len), best->plan.recompute) /
        e.step_time / gpus / 1e12;
  out.note =
      fmt::format("micro-batch {}, vpp {}{}{}", best->plan.micro_batch, best->plan.vpp,
                  best->plan.offload_layers > 0
                      ? fmt::format(", {} layers' activations offloaded", best->plan.offload_layers)
                      : "",
                  e.fits ? "" : ", DOES NOT FIT in memory");
  if (x) {
    x->cluster = c;
    x->job = j;
    x->plan = best->plan;
    x->eval = e;
  }
}

}  // namespace

namespace {
constexpr std::array<const char*, 3> kRunKindNames{"training", "inference", "collective"};
}  // namespace

const char* to_string(RunKind k) { return detail::name_of(kRunKindNames, k); }

namespace {
constexpr std::array<const char*, 4> kPrecisionNames{"16-bit", "fp8", "nvfp4", "mxfp8"};
}  // namespace

const char* precision_name(Precision p) { return detail::name_of(kPrecisionNames, p); }

Precision precision_of(Dtype d) {
  return d == Dtype::fp8     ? Precision::fp8
         : d == Dtype::nvfp4 ? Precision::nvfp4
         : d == Dtype::mxfp8 ? Precision::mxfp8
                             : Precision::bits16;
}

const RunCorpus& builtin_runs() {
  static const RunCorpus corpus = embedded_runs();
  return corpus;
}

std::vector<CalibrationResult> run_calibration(const Calibration& cal, bool fit_rows_only,
                                               const RunCorpus& corpus) {
  if (!fit_rows_only) return run_calibration_where(cal, RowFilter{}, corpus);
  return run_calibration_where(
      cal, [](const CalibrationResult& r) { return !r.held_out; }, corpus);
}

namespace {

/// The figures each kind of row can be compared on.
void check_metric(const detail::JsonCursor& measured, RunKind kind) {
  static constexpr std::array<std::string_view, 4> kTraining{
      "iteration_time_s", "tokens_per_s_per_gpu", "mfu", "hardware_tflops_per_gpu"};
  static constexpr std::array<std::string_view, 2> kServing{"ttft_ms", "end_to_end_ms"};
  static constexpr std::array<std::string_view, 2> kCollective{"busbw_GBps", "time_us"};
  std::span<const std::string_view> known = kCollective;
  if (kind == RunKind::training) known = kTraining;
  if (kind == RunKind::inference) known = kServing;
  const std::string metric = measured.string("metric");
  if (std::find(known.begin(), known.end(), metric) != known.end()) return;
  std::string names;
  for (const auto k : known) names += (names.empty() ? "" : ", ") + std::string(k);
  measured.fail("metric", fmt::format("one of {} for a {} run", names, to_string(kind)));
}

/// A row's identity, role and kind (what a RowFilter sees), with its model and cluster read
/// once: the filter needs their types, the prediction the rest.
CalibrationResult row_header(const detail::JsonCursor& r, std::optional<Model>& m,
                             ClusterSpec& cs) {
  CalibrationResult res;
  res.name = r.string("name");
  res.source = r.string("source");
  res.family = r.string("family");
  res.metric = r.at("measured").string("metric");
  res.measured = r.at("measured").positive("value");
  res.checked = r.boolean_or("checked", true);
  const std::string role = r.has("role") ? r.string("role") : "fit";
  if (role != "fit" && role != "holdout") r.fail("role", "\"fit\" or \"holdout\"");
  res.held_out = role == "holdout";
  res.kind = r.has("collective")  ? RunKind::collective
             : r.has("inference") ? RunKind::inference
                                  : RunKind::training;
  check_metric(r.at("measured"), res.kind);
  cs = run_cluster_spec(r);
  res.arch = cs.gpu.arch;
  if (res.kind == RunKind::training)
    res.precision = precision_of(parse_dtype(r.at("job").string("dtype"), r.source()));
  if (res.kind == RunKind::inference)
    res.precision = precision_of(parse_dtype(r.at("inference").string("weight_dtype"), r.source()));
  if (res.kind != RunKind::collective) m = run_model(r);
  res.moe = m && m->spec.moe();
  if (m) res.model = m->spec.name;
  return res;
}

/// Runs `f`; an InputError it throws names row `r` when it does not already. What the planner
/// rejects names its flag ("tp: 3 does not divide the 512 GPUs"); in a runs file the row is the
/// place to point at.
template <typename F>
void at_row(const detail::JsonCursor& r, F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind(r.source() + ":", 0) == 0) throw;
    throw InputError(input_message(r.source(), r.path(), what));
  }
}

void predict_row(const detail::JsonCursor& r, const std::optional<Model>& m, const Cluster& c,
                 const Calibration& cal, CalibrationResult& res, RunExplanation* x) {
  at_row(r, [&] {
    if (res.kind == RunKind::collective)
      predict_collective(r, c, cal, res);
    else if (res.kind == RunKind::inference)
      predict_inference(r, c, *m, cal, res, x);
    else
      predict_training(r, c, *m, cal, res, x);
  });
  if (!res.checked) res.note += "; not checked: " + r.string("why_not_checked");
}

/// A row's header (what a RowFilter sees) with its model and cluster, read and built once. The
/// cluster is the calibration's to cost on, never changed by it: kept, its memo of group shapes
/// serves every later prediction of the row (a fit predicts each row thousands of times).
struct RowHead {
  CalibrationResult res;
  std::optional<Model> model;
  std::optional<Cluster> cluster;
};

/// A corpus parsed, and each row's header as it is first read: a fit predicts every row hundreds
/// of times, and parsing the corpus and the rows' presets again was most of the time.
struct ParsedCorpus {
  nlohmann::json doc;
  std::mutex mu;
  std::vector<std::shared_ptr<const RowHead>> heads;  ///< by row, empty until read
};

/// Once per corpus text a process sees; the last few kept.
std::shared_ptr<ParsedCorpus> parsed_corpus(const RunCorpus& corpus) {
  static std::mutex mu;
  static std::vector<std::pair<std::string, std::shared_ptr<ParsedCorpus>>> cache;
  {
    const std::lock_guard<std::mutex> lock(mu);
    for (const auto& [text, parsed] : cache)
      if (text == corpus.text) return parsed;
  }
  auto parsed = std::make_shared<ParsedCorpus>();
  parsed->doc = detail::parse_json(corpus.text, corpus.source);
  const std::lock_guard<std::mutex> lock(mu);
  constexpr std::size_t kKept = 4;
  if (cache.size() >= kKept) cache.erase(cache.begin());
  cache.emplace_back(corpus.text, parsed);
  return parsed;
}

/// The corpus's "runs" array, after its "schema" (when given) is checked; `parsed` keeps the
/// parsed corpus alive while the cursor is used.
detail::JsonCursor runs_array(std::shared_ptr<ParsedCorpus>& parsed, const RunCorpus& corpus) {
  parsed = parsed_corpus(corpus);
  const detail::JsonCursor top(parsed->doc, corpus.source);
  if (top.has("schema") && top.string("schema") != kRunsSchema)
    top.fail("schema", fmt::format("\"{}\"", kRunsSchema));
  const detail::JsonCursor runs = top.at("runs");
  if (runs.array_size() == 0) top.fail("runs", "a non-empty array of runs");
  return runs;
}

/// Row `i`'s header, read the first time it is asked for (InputError as row_header).
std::shared_ptr<const RowHead> row_head(ParsedCorpus& parsed, const detail::JsonCursor& r,
                                        std::size_t i) {
  {
    const std::lock_guard<std::mutex> lock(parsed.mu);
    if (parsed.heads.size() <= i) parsed.heads.resize(i + 1);
    if (parsed.heads[i]) return parsed.heads[i];
  }
  auto head = std::make_shared<RowHead>();
  ClusterSpec cs;
  head->res = row_header(r, head->model, cs);
  at_row(r, [&] { head->cluster.emplace(cs, r.source()); });
  const std::lock_guard<std::mutex> lock(parsed.mu);
  parsed.heads[i] = head;
  return head;
}

}  // namespace

RunCorpus load_runs_file(const std::string& path) {
  RunCorpus corpus{detail::read_text_file(path), path};
  warn_unknown_run_keys(corpus);
  return corpus;
}

void warn_unknown_run_keys(const RunCorpus& corpus) {
  std::shared_ptr<ParsedCorpus> parsed;
  const auto runs = runs_array(parsed, corpus);
  for (std::size_t i = 0; i < runs.array_size(); ++i) {
    const auto r = runs.at(i);
    r.warn_unknown_keys({"name", "family", "role", "checked", "why_not_checked", "cluster", "nodes",
                         "server_nics", "server_gpus", "model", "job", "plan", "measured",
                         "inference", "collective", "bytes", "algorithm"});
    auto inner = [&](const char* key, const std::vector<std::string_view>& known) {
      if (r.has(key)) r.at(key).warn_unknown_keys(known);
    };
    // A run's job: what plan files record, and the settings only a run states.
    std::vector<std::string_view> job = detail::job_json_keys();
    job.insert(job.end(), {"stack", "gpus", "flexible_pipeline_layout", "activation_offload",
                           "recompute_module_search"});
    inner("job", job);
    inner("plan",
          {"tp", "pp", "dp", "cp", "ep", "expert_tp", "order", "zero", "recompute",
           "sequence_parallel", "micro_batch", "vpp", "first_stage_layers", "last_stage_layers"});
    inner("inference",
          {"prompt_len", "output_len", "batch", "weight_dtype", "kv_dtype", "runtime"});
    inner("measured", {"metric", "value"});
  }
}

std::vector<CalibrationResult> run_calibration_where(const Calibration& cal, const RowFilter& keep,
                                                     const RunCorpus& corpus) {
  std::shared_ptr<ParsedCorpus> parsed;
  const auto runs = runs_array(parsed, corpus);
  std::vector<CalibrationResult> out;
  for (std::size_t i = 0; i < runs.array_size(); ++i) {
    const auto r = runs.at(i);
    const auto head = row_head(*parsed, r, i);
    CalibrationResult res = head->res;
    if (keep && !keep(res)) continue;
    predict_row(r, head->model, *head->cluster, cal, res, nullptr);
    out.push_back(res);
  }
  return out;
}

RunExplanation explain_run(const Calibration& cal, const std::string& name,
                           const RunCorpus& corpus) {
  std::shared_ptr<ParsedCorpus> parsed;
  const auto runs = runs_array(parsed, corpus);
  std::vector<std::size_t> hits;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < runs.array_size(); ++i) {
    const std::string n = runs.at(i).string("name");
    if (n == name) {
      hits = {i};
      break;
    }
    if (n.find(name) != std::string::npos) hits.push_back(i), names.push_back(n);
  }
  if (hits.size() != 1) {
    std::string which = hits.empty() ? "matches none" : fmt::format("matches {}:", hits.size());
    for (std::size_t k = 0; k < names.size() && k < 3; ++k) which += " '" + names[k] + "',";
    if (names.size() > 3) which += " ...";
    if (!names.empty() && which.back() == ',') which.pop_back();
    throw_input("--explain", "",
                fmt::format("expected the name of one calibration run, or a part of it that one "
                            "name contains, got '{}' ({}; topoplan calibrate lists them)",
                            name, which));
  }
  const auto r = runs.at(hits.front());
  RunExplanation x;
  ClusterSpec cs;
  x.result = row_header(r, x.model, cs);
  std::optional<Cluster> c;
  at_row(r, [&] { c.emplace(cs, r.source()); });
  predict_row(r, x.model, *c, cal, x.result, &x);
  return x;
}

}  // namespace topoplan
