// Benchmarks of the cost model and the search (Google Benchmark). Run with cmake/bench.sh, which
// builds with -DTOPOPLAN_BUILD_BENCH=ON and reports medians of repeated runs.
//
// Counters: plans = candidates costed per search; plans_per_s = per second of wall time;
// peak_MiB = the process's peak resident memory so far (getrusage), so cases run smallest first.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include "topoplan/placement.hpp"
#include "topoplan/presets.hpp"
#include "topoplan/search.hpp"

using namespace topoplan;

namespace {

Cluster cluster(const char* name, int nodes) {
  ClusterSpec s = load_cluster(name, "bench");
  s.nodes = nodes;
  return Cluster(s, name);
}

double peak_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

/// One full evaluate() (order-independent core, group shapes, communication) per iteration:
/// the cost of costing one plan from scratch.
void BM_EvaluateOnePlan(benchmark::State& state) {
  Cluster c = cluster("dgx-h100", 2048);
  Model m(load_model("llama3.1-405b", "bench"));
  JobSpec j;
  j.seq_len = 8192;
  j.global_batch = 2048;
  Plan p;
  p[Dim::tp] = 8;
  p[Dim::cp] = 2;
  p[Dim::pp] = 16;
  p[Dim::dp] = 64;
  p.vpp = 2;
  p.sequence_parallel = true;
  const Calibration cal;
  const Mapping map = Mapping::from_order(p);
  for (auto _ : state) {
    Evaluation e = evaluate(c, m, j, p, map, cal);
    benchmark::DoNotOptimize(e);
  }
  state.counters["plans_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

/// A full search; the argument is the thread count. `split`: also the layer splits that move
/// layers off the last pipeline stage (SearchOptions::search_split, on in `plan` by default).
void run_search(benchmark::State& state, const char* cluster_name, int nodes, const char* model,
                std::int64_t seq, std::int64_t batch, bool split = false) {
  Cluster c = cluster(cluster_name, nodes);
  Model m(load_model(model, "bench"));
  JobSpec j;
  j.seq_len = seq;
  j.global_batch = batch;
  SearchOptions o;
  o.top_k = 10;
  o.threads = static_cast<int>(state.range(0));
  o.search_split = split;
  std::int64_t plans = 0;
  for (auto _ : state) {
    SearchResult r = search(c, m, j, Calibration{}, o);
    plans = r.evaluated;
    benchmark::DoNotOptimize(r);
  }
  state.counters["plans"] = static_cast<double>(plans);
  state.counters["plans_per_s"] =
      benchmark::Counter(static_cast<double>(plans) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["peak_MiB"] = peak_mib();
}

void BM_Search_Llama405B_16384xH100(benchmark::State& s) {
  run_search(s, "dgx-h100", 2048, "llama3.1-405b", 8192, 2048);
}
void BM_Search_DeepSeekV3_2048xH800(benchmark::State& s) {
  run_search(s, "hgx-h800", 256, "deepseek-v3", 4096, 1920);
}
void BM_Search_Llama405B_131072xH100(benchmark::State& s) {
  run_search(s, "dgx-h100", 16384, "llama3.1-405b", 8192, 2048);
}
// The same searches as `plan` runs them by default (the split search on).
void BM_SearchSplit_Llama405B_16384xH100(benchmark::State& s) {
  run_search(s, "dgx-h100", 2048, "llama3.1-405b", 8192, 2048, true);
}
void BM_SearchSplit_DeepSeekV3_2048xH800(benchmark::State& s) {
  run_search(s, "hgx-h800", 256, "deepseek-v3", 4096, 1920, true);
}

/// The placement search (issue 12) on 16,384 H100 (2,048 x dgx-h100) with 16 GPUs down, one in
/// each of 16 servers spread over the cluster: Llama-3.1-405B, TP 8 x PP 16 x DP 127 (16,256 GPUs,
/// every whole server but those 16). Counters: candidates = placements costed per run.
void BM_Place_Llama405B_16384xH100_16Down(benchmark::State& state) {
  ClusterSpec s = load_cluster("dgx-h100", "bench");
  s.nodes = 2048;
  for (int k = 0; k < 16; ++k) add_down_gpus(s, fmt::format("{}:{}", 7 + 128 * k, k % 8), "bench");
  const Cluster c(s, "bench");
  Model m(load_model("llama3.1-405b", "bench"));
  JobSpec j;
  j.seq_len = 8192;
  j.global_batch = 2032;
  Plan p;
  p[Dim::tp] = 8;
  p[Dim::pp] = 16;
  p[Dim::dp] = 127;
  p.sequence_parallel = true;
  p.recompute = Recompute::full;
  std::int64_t candidates = 0;
  double gain = 0;
  for (auto _ : state) {
    Placement pl = place(c, m, j, p, Calibration{});
    candidates = pl.stats.candidates;
    gain = pl.stats.gain();
    benchmark::DoNotOptimize(pl);
  }
  state.counters["candidates"] = static_cast<double>(candidates);
  state.counters["candidates_per_s"] =
      benchmark::Counter(static_cast<double>(candidates) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["gain_pct"] = 100.0 * gain;
  state.counters["peak_MiB"] = peak_mib();
}

}  // namespace

BENCHMARK(BM_EvaluateOnePlan);
BENCHMARK(BM_Place_Llama405B_16384xH100_16Down)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Search_Llama405B_16384xH100)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Search_DeepSeekV3_2048xH800)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Search_Llama405B_131072xH100)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SearchSplit_Llama405B_16384xH100)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SearchSplit_DeepSeekV3_2048xH800)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
