// Benchmarks of the calibration (Google Benchmark; registered beside bench_search.cpp's, run with
// cmake/bench.sh). A fit predicts the fit rows hundreds of times: what `calibrate --fit` and
// `--cross-validate` cost is these passes.
#include <benchmark/benchmark.h>

#include "topoplan/calibration_runs.hpp"

using namespace topoplan;

namespace {

/// One pass over every published run (160 rows, each plan searched with its stated settings),
/// after the first: the corpus and each row's model and cluster are read once per process.
void BM_CalibrateAllRows(benchmark::State& state) {
  std::size_t rows = 0;
  for (auto _ : state) {
    const auto out = run_calibration(Calibration{});
    rows = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["rows"] = static_cast<double>(rows);
}

/// calibrate --fit: every fitted constant chosen on the fit rows (three rounds of coordinate
/// descent, each constant a 21-point grid and a golden-section search).
void BM_CalibrateFit(benchmark::State& state) {
  for (auto _ : state) {
    const CalibrationFit f = fit_calibration(Calibration{}, default_fitted_constants());
    benchmark::DoNotOptimize(f);
  }
}

}  // namespace

BENCHMARK(BM_CalibrateAllRows)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateFit)->Unit(benchmark::kMillisecond)->UseRealTime();
