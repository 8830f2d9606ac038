#include "topoplan/import/megatron_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <sstream>
#include <vector>

#include "topoplan/error.hpp"

namespace topoplan {
namespace {

template <typename Int = int>
Int positive(const std::string& flag, const std::string& value, const std::string& source) {
  Int v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc{} || p != value.data() + value.size() || v < 1)
    throw_input(source, flag, fmt::format("expected a positive integer, got '{}'", value));
  return v;
}

/// Words split the way a shell splits a training script's arguments: on white space outside
/// quotes, '...' and "..." kept whole, a backslash escaping the next character (and a backslash
/// before a line break joining the lines); "--flag=value" as two.
std::vector<std::string> tokenize(const std::string& args, const std::string& source) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const char ch = args[i];
    if (quote) {
      if (ch == quote)
        quote = 0;
      else if (ch == '\\' && quote == '"' && i + 1 < args.size())
        word += args[++i];
      else
        word += ch;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (ch == '\\' && i + 1 < args.size()) {
      if (args[++i] != '\n') word += args[i], in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (quote) throw_input(source, "", fmt::format("expected a closing {} quote", quote));
  if (in_word) words.push_back(std::move(word));
  std::vector<std::string> tok;
  for (const std::string& t : words) {
    const auto eq = t.find('=');
    if (t.starts_with("--") && eq != std::string::npos) {
      tok.push_back(t.substr(0, eq));
      tok.push_back(t.substr(eq + 1));
    } else {
      tok.push_back(t);
    }
  }
  return tok;
}

/// Megatron-LM's model-shape arguments and the field each must equal.
constexpr std::pair<const char*, std::int64_t ModelSpec::*> kShapeFlags[] = {
    {"--num-layers", &ModelSpec::layers},
    {"--hidden-size", &ModelSpec::hidden},
    {"--ffn-hidden-size", &ModelSpec::ffn},
    {"--num-attention-heads", &ModelSpec::heads},
    {"--num-query-groups", &ModelSpec::kv_heads},
    {"--num-experts", &ModelSpec::experts},
    {"--moe-router-topk", &ModelSpec::top_k},
    {"--moe-ffn-hidden-size", &ModelSpec::expert_ffn}};

bool is_shape_flag(const std::string& f) {
  for (const auto& [flag, field] : kShapeFlags)
    if (f == flag) return true;
  return false;
}

/// Megatron-core's --pipeline-model-parallel-layout ("Et*3|(tt|)*29,m|L"): virtual stages split
/// by '|', "X*n" and "(...)*n" repeat, t is a decoder layer, E/L the embedding and loss, m a
/// multi-token-prediction layer (topoplan costs those on the last stage, wherever the layout puts
/// them; --mtp-num-layers says how many). Returns decoder layers per virtual stage.
std::vector<std::int64_t> parse_layout(const std::string& text, const std::string& source) {
  const std::string flag = "--pipeline-model-parallel-layout";
  auto fail = [&](const std::string& what) {
    throw_input(source, flag, fmt::format("expected {}, got '{}'", what, text));
  };
  // Expands repeats, innermost first; each expansion is bounded by the layers it may produce.
  std::string s = text;
  for (int guard = 0; guard < 64; ++guard) {
    const auto star = s.find('*');
    if (star == std::string::npos) break;
    std::size_t begin = star, end = star + 1;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == star + 1 || end - star > 6) fail("a repeat count after '*'");
    const int n = std::stoi(s.substr(star + 1, end - star - 1));
    std::string unit;
    if (star > 0 && s[star - 1] == ')') {
      const auto open = s.rfind('(', star - 1);
      if (open == std::string::npos) fail("'(' before ')*n'");
      unit = s.substr(open + 1, star - 2 - open);
      begin = open;
    } else if (star > 0) {
      unit = s.substr(star - 1, 1);
      begin = star - 1;
    } else {
      fail("a layer or a group before '*'");
    }
    std::string repeated;
    for (int k = 0; k < n && repeated.size() < 1'000'000; ++k) repeated += unit;
    if (repeated.size() >= 1'000'000) fail("a layout of at most a million entries");
    s = s.substr(0, begin) + repeated + s.substr(end);
  }
  std::vector<std::int64_t> stages{0};
  for (char ch : s) {
    if (ch == '|')
      stages.push_back(0);
    else if (ch == 't')
      ++stages.back();
    else if (ch != 'E' && ch != 'L' && ch != 'm' && ch != ',' &&
             !std::isspace(static_cast<unsigned char>(ch)))
      fail("virtual stages of t (decoder layers), E, L and m, split by '|'");
  }
  return stages;
}

/// The model's shape and the uneven pipeline split; false for another flag.
bool read_model_flag(const std::string& f, const std::function<const std::string&()>& value,
                     const std::string& source, ImportedPlan& out) {
  if (f == "--decoder-first-pipeline-num-layers") {
    out.first_stage_layers = positive(f, value(), source);
  } else if (f == "--decoder-last-pipeline-num-layers") {
    out.last_stage_layers = positive(f, value(), source);
  } else if (f == "--pipeline-model-parallel-layout") {
    out.layout = parse_layout(value(), source);
  } else if (f == "--mtp-num-layers") {  // a training argument: the job's count
    const std::int64_t n = positive(f, value(), source);
    if (n > kMaxMtpLayers)
      throw_input(source, f, fmt::format("expected at most {} modules, got {}", kMaxMtpLayers, n));
    out.mtp_layers = static_cast<int>(n);
  } else if (is_shape_flag(f)) {
    out.model_shape.emplace_back(f, positive(f, value(), source));
  } else {
    return false;
  }
  return true;
}

/// Megatron-LM's --recompute-granularity takes full or selective only (its arguments' choices).
Recompute recompute_granularity(const std::string& g, const std::string& source) {
  if (g != "full" && g != "selective")
    throw_input(source, "--recompute-granularity",
                fmt::format("expected full or selective, got '{}'", g));
  return g == "full" ? Recompute::full : Recompute::selective;
}

}  // namespace

namespace {

/// What Megatron-LM does when a flag is not given.
ImportedPlan megatron_defaults() {
  ImportedPlan out;
  out.dp_given = false;
  out.plan.zero = 0;
  out.overlap_grad_reduce = false;
  out.overlap_param_gather = false;
  out.tp_comm_overlap = false;
  out.ep_comm_overlap = false;
  out.grad_reduce_bf16 = false;
  out.fp8_param_gather = false;
  out.fp4_param_gather = false;
  out.cuda_graphs = false;
  out.fp8_attention = false;
  out.overlap_p2p = false;
  return out;
}

/// The flags that take no value and switch one setting on; false for any other flag.
bool read_switch(const std::string& f, ImportedPlan& out) {
  static const std::pair<const char*, void (*)(ImportedPlan&)> kSwitches[] = {
      {"--sequence-parallel", [](ImportedPlan& o) { o.plan.sequence_parallel = true; }},
      {"--use-distributed-optimizer", [](ImportedPlan& o) { o.plan.zero = 1; }},
      {"--recompute-activations", [](ImportedPlan& o) { o.plan.recompute = Recompute::selective; }},
      {"--overlap-grad-reduce", [](ImportedPlan& o) { o.overlap_grad_reduce = true; }},
      {"--overlap-param-gather", [](ImportedPlan& o) { o.overlap_param_gather = true; }},
      {"--tp-comm-overlap", [](ImportedPlan& o) { o.tp_comm_overlap = true; }},
      {"--overlap-moe-expert-parallel-comm", [](ImportedPlan& o) { o.ep_comm_overlap = true; }},
      {"--grad-reduce-in-bf16", [](ImportedPlan& o) { o.grad_reduce_bf16 = true; }},
      {"--fp8-param-gather", [](ImportedPlan& o) { o.fp8_param_gather = true; }},
      {"--fp4-param-gather", [](ImportedPlan& o) { o.fp4_param_gather = true; }},
      {"--fp8-dot-product-attention", [](ImportedPlan& o) { o.fp8_attention = true; }},
      {"--overlap-p2p-communication", [](ImportedPlan& o) { o.overlap_p2p = true; }},
      {"--use-tp-pp-dp-mapping", [](ImportedPlan& o) { o.plan.order = kTpPpDpOrder; }},
      {"--cpu-offloading", [](ImportedPlan& o) { o.cpu_offloading = true; }},
      {"--external-cuda-graph", [](ImportedPlan& o) { o.cuda_graphs = true; }},
      {"--enable-cuda-graph", [](ImportedPlan& o) { o.cuda_graphs = true; }},
  };
  for (const auto& [flag, set] : kSwitches)
    if (f == flag) {
      set(out);
      return true;
    }
  return false;
}

/// --cp-comm-type's one value (a list per layer is not modelled); Megatron-LM's help spells
/// all_gather "allgather", and its config takes either.
CpComm cp_comm_arg(const std::string& v, const std::string& source) {
  return parse_cp_comm(v == "allgather" ? "all_gather" : v, source + ": --cp-comm-type");
}

/// --recompute-modules' names (nargs: the tokens up to the next flag), from tok[i + 1] on.
void read_recompute_modules(const std::vector<std::string>& tok, std::size_t& i,
                            const std::string& source, ImportedPlan& out) {
  unsigned modules = 0;
  bool core_attn = false;
  while (i + 1 < tok.size() && tok[i + 1].rfind("--", 0) != 0) {
    const std::string& name = tok[++i];
    const unsigned bit = recompute_module_bit(name);
    if (name == "core_attn")
      core_attn = true;
    else if (bit != 0)
      modules |= bit;
    else  // mlp, moe, shared_experts, mhc: not modelled
      throw_input(
          source, "--recompute-modules",
          fmt::format("expected core_attn, layernorm, mla_up_proj or moe_act, got '{}'", name));
  }
  out.recompute_modules = modules;
  out.recompute_core_attn = core_attn;
}

}  // namespace

ImportedPlan parse_megatron_args(const std::string& args, const std::string& source) {
  const std::vector<std::string> tok = tokenize(args, source);
  ImportedPlan out = megatron_defaults();
  bool saw_tp = false, mx_recipe = false;
  auto value = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= tok.size() || tok[i + 1].rfind("--", 0) == 0)
      throw_input(source, tok[i], "expected a value after it");
    return tok[++i];
  };
  for (std::size_t i = 0; i < tok.size(); ++i) {
    const std::string& f = tok[i];
    if (read_model_flag(
            f, [&]() -> const std::string& { return value(i); }, source, out) ||
        read_switch(f, out))
      continue;
    if (f == "--tensor-model-parallel-size") {
      out.plan[Dim::tp] = positive(f, value(i), source);
      saw_tp = true;
    } else if (f == "--pipeline-model-parallel-size") {
      out.plan[Dim::pp] = positive(f, value(i), source);
    } else if (f == "--context-parallel-size") {
      out.plan[Dim::cp] = positive(f, value(i), source);
    } else if (f == "--expert-model-parallel-size") {
      out.plan[Dim::ep] = positive(f, value(i), source);
    } else if (f == "--expert-tensor-parallel-size") {
      out.plan.expert_tp = positive(f, value(i), source);
    } else if (f == "--micro-batch-size") {
      out.plan.micro_batch = positive(f, value(i), source);
    } else if (f == "--global-batch-size") {
      out.global_batch = positive(f, value(i), source);
    } else if (f == "--seq-length") {
      out.seq_len = positive(f, value(i), source);
    } else if (f == "--recompute-granularity") {
      out.plan.recompute = recompute_granularity(value(i), source);
    } else if (f == "--num-layers-per-virtual-pipeline-stage") {
      out.layers_per_virtual_stage = positive(f, value(i), source);
    } else if (f == "--num-virtual-stages-per-pipeline-rank" ||
               f == "--virtual-pipeline-model-parallel-size") {
      out.plan.vpp = positive(f, value(i), source);
    } else if (f == "--ddp-bucket-size") {
      out.dp_bucket_params = positive<std::int64_t>(f, value(i), source);  // 4000000000 is common
    } else if (f == "--recompute-modules") {
      read_recompute_modules(tok, i, source, out);
    } else if (f == "--recompute-method") {
      out.recompute_block = value(i) == "block";
    } else if (f == "--recompute-num-layers") {
      out.recompute_num_layers = positive(f, value(i), source);
    } else if (f == "--cpu-offloading-num-layers") {
      out.cpu_offloading_num_layers = positive(f, value(i), source);
    } else if (f == "--cp-comm-type") {
      out.cp_comm = cp_comm_arg(value(i), source);
    } else if (f == "--moe-token-dispatcher-type") {  // allgather and alltoall copy per expert
      out.moe_dispatcher = value(i) == "flex" ? MoeDispatcher::flex : MoeDispatcher::alltoall;
    } else if (f == "--cuda-graph-impl") {  // none, local, transformer_engine, full_iteration
      out.cuda_graphs = value(i) != "none";
    } else if (f == "--fp8-format") {  // e4m3 or hybrid: the linear layers in FP8
      (void)value(i);
      out.dtype = Dtype::fp8;
    } else if (f == "--fp8-recipe") {  // mxfp8: FP8 with block scales (only with --fp8-format)
      mx_recipe = value(i) == "mxfp8";
    } else if (f == "--fp4-format") {  // e2m1: the linear layers in NVFP4
      (void)value(i);
      out.dtype = Dtype::nvfp4;
    } else if (f == "--bf16") {
      if (!out.dtype || !low_precision_linear(*out.dtype)) out.dtype = Dtype::bf16;
    } else if (f == "--fp16") {
      out.dtype = Dtype::fp16;
    }
  }
  if (mx_recipe && out.dtype == Dtype::fp8) out.dtype = Dtype::mxfp8;
  // Selective granularity with modules that leave out core_attn recomputes those modules only.
  if (out.plan.recompute == Recompute::selective && !out.recompute_core_attn)
    out.plan.recompute = Recompute::none;
  if (!saw_tp && tok.empty())
    throw_input(source, "",
                "expected Megatron-LM arguments such as --tensor-model-parallel-size 8");
  // No --mtp-num-layers: Megatron-LM trains no multi-token prediction, whatever the checkpoint.
  if (!out.mtp_layers) out.mtp_layers = 0;
  return out;
}

void check_against_model(const ImportedPlan& imp, const ModelSpec& m, const std::string& source) {
  for (const auto& [flag, v] : imp.model_shape) {
    std::int64_t has = 0;
    for (const auto& [name, field] : kShapeFlags)
      if (flag == name) has = m.*field;
    if (has != v)
      throw_input(source, flag,
                  fmt::format("{}, but the model planned ({}) has {}: pass --model for the model "
                              "these arguments train",
                              v, m.name, has));
  }
}

namespace {

/// A layout string's split: vpp from its virtual stages, the first and last stages' layers.
void apply_layout(const ImportedPlan& imp, std::int64_t layers, Plan& p) {
  const std::string flag = "--pipeline-model-parallel-layout";
  const int pp = p[Dim::pp];
  const auto n = static_cast<std::int64_t>(imp.layout.size());
  if (n % pp != 0)
    throw_input("--megatron-args", flag,
                fmt::format("expected a multiple of pp {} virtual stages, got {}", pp, n));
  std::vector<std::int64_t> stage(static_cast<std::size_t>(pp), 0);
  std::int64_t total = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    stage[static_cast<std::size_t>(k % pp)] += imp.layout[static_cast<std::size_t>(k)];
    total += imp.layout[static_cast<std::size_t>(k)];
  }
  if (total != layers)
    throw_input("--megatron-args", flag,
                fmt::format("expected the model's {} decoder layers, got {}", layers, total));
  p.vpp = static_cast<int>(n / pp);
  p.flexible_layout = true;
  for (int i = 2; i < pp - 1; ++i)
    if (stage[static_cast<std::size_t>(i)] != stage[1]) {  // every stage its own count
      p.stage_layers = stage;
      return;
    }
  p.first_stage_layers = stage.front();
  p.last_stage_layers = stage.back();
}

}  // namespace

void apply_layer_choices(const ImportedPlan& imp, std::int64_t layers, Plan& p) {
  if (!imp.layout.empty()) apply_layout(imp, layers, p);
  if (p.recompute == Recompute::full && imp.recompute_block && imp.recompute_num_layers)
    p.recompute_layers = *imp.recompute_num_layers * p.vpp;
  if (imp.cpu_offloading && imp.cpu_offloading_num_layers)
    p.offload_layers = *imp.cpu_offloading_num_layers;
  if (imp.layout.empty() && !imp.first_stage_layers && !imp.last_stage_layers) return;
  // Megatron-LM gives the stages without a count an equal share of the rest.
  const int pp = p[Dim::pp];
  const std::int64_t given = imp.first_stage_layers.value_or(0) + imp.last_stage_layers.value_or(0);
  const int others = pp - (imp.first_stage_layers ? 1 : 0) - (imp.last_stage_layers ? 1 : 0);
  const std::int64_t share =
      others > 0 && (layers - given) % others == 0 ? (layers - given) / others : 0;
  if (imp.layout.empty()) {
    p.first_stage_layers = imp.first_stage_layers.value_or(share);
    p.last_stage_layers = imp.last_stage_layers.value_or(share);
  }
  // The split topoplan picks by default is recorded as the default, not as an explicit one.
  const auto dflt = pipeline_split(layers, pp, p.vpp, p.flexible_layout);
  if (dflt && dflt->first == p.first_stage_layers && dflt->last == p.last_stage_layers)
    p.first_stage_layers = p.last_stage_layers = 0;
}

}  // namespace topoplan
