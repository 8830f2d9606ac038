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

/// calibrate --cross-validate: one fit per family left out, every fitted constant, on the
/// argument's threads (the CLI uses the machine's cores). The README's cross-validation table
/// test runs it once.
void BM_CalibrateCrossValidate(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::size_t folds = 0;
  for (auto _ : state) {
    const CrossValidation cv =
        cross_validate(Calibration{}, default_fitted_constants(), threads, {}, builtin_runs());
    folds = cv.folds.size();
    benchmark::DoNotOptimize(cv);
  }
  state.counters["folds"] = static_cast<double>(folds);
}

}  // namespace

BENCHMARK(BM_CalibrateAllRows)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateFit)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateCrossValidate)
    ->Arg(2)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
