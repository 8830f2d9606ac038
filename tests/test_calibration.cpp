#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "helpers.hpp"
#include "topoplan/accuracy.hpp"
#include "topoplan/calibration_runs.hpp"
#include "topoplan/error.hpp"
#include "topoplan/inference.hpp"
#include "topoplan/search.hpp"

using namespace topoplan;

TEST_CASE("every fitted run, and Megatron-LM's held-back rows, are predicted within 7%") {
  auto results = run_calibration(Calibration{});
  std::cout << "\n" << calibration_report(results, "table") << std::flush;
  int checked = 0;
  for (const auto& r : results) {
    if (!r.checked || (r.held_out && r.name.rfind("Megatron-LM", 0) != 0)) continue;
    ++checked;
    INFO(r.name << ": published " << r.measured << ", predicted " << r.predicted);
    CHECK(std::abs(r.error()) <= 0.07);
  }
  // Megatron Table 1 (6), Korthikanti (4), the H100 recipe, and the collective measurements.
  CHECK(checked >= 16);
}

TEST_CASE("calibrate's JSON rows carry the class the expected-error lines group by") {
  const auto results = run_calibration(Calibration{});
  const auto j = nlohmann::json::parse(calibration_report(results, "json"));
  REQUIRE(j.at("runs").size() == results.size());
  int seen = 0;
  for (const auto& row : j.at("runs")) {
    const std::string name = row.at("name");
    if (name.rfind("DeepSeek-V3 pre-training", 0) == 0) {  // H800, FP8, routed experts
      CHECK(row.at("kind") == "training");
      CHECK(row.at("arch") == "hopper");
      CHECK(row.at("precision") == "fp8");
      CHECK(row.at("moe") == true);
      ++seen;
    }
    if (name == "FasterTransformer GPT-20B, A100, TP 1, 128 in / 20 out, batch 1") {
      CHECK(row.at("kind") == "inference");
      CHECK(row.at("arch") == "ampere");
      CHECK(row.at("precision") == "16-bit");
      CHECK(row.at("moe") == false);
      ++seen;
    }
  }
  CHECK(seen == 2);
}

TEST_CASE("calibrate prints the held-back error by regime, as the expected-error bands read it") {
  const auto rows = run_calibration(Calibration{});
  const std::vector<RegimeSummary> groups = summarize_by_regime(rows);
  // Every held-back, checked run is in exactly one regime; each regime's figures are the ones
  // evaluate and plan print for a plan of that regime when it has enough runs.
  int runs = 0;
  for (const auto& g : groups) {
    runs += g.held_out.runs;
    INFO(regime_name(g.kind, g.arch, g.precision, g.moe));
    if (g.held_out.runs < kMinBandRuns) continue;
    const AccuracyBand band =
        accuracy_band({g.kind, g.arch, g.precision, g.moe, ""}, Calibration{});
    CHECK(band.basis == regime_name(g.kind, g.arch, g.precision, g.moe));
    CHECK(band.held_out.runs == g.held_out.runs);
    CHECK(band.held_out.mean == Approx(g.held_out.mean));
    CHECK(band.held_out.worst == Approx(g.held_out.worst));
  }
  CHECK(runs == summarize(rows).held_out.runs);
  // Ordered by kind, architecture, precision, dense before MoE: training before inference.
  REQUIRE(groups.size() >= 10);
  CHECK(regime_name(groups.front().kind, groups.front().arch, groups.front().precision,
                    groups.front().moe) == "training, ampere, 16-bit, dense");
  for (std::size_t i = 1; i < groups.size(); ++i)
    CHECK(std::make_tuple(groups[i - 1].kind, groups[i - 1].arch, groups[i - 1].precision,
                          groups[i - 1].moe) <
          std::make_tuple(groups[i].kind, groups[i].arch, groups[i].precision, groups[i].moe));
  // Bias is signed by speed: a time metric predicted shorter than published is + (faster).
  CalibrationResult t;
  t.metric = "iteration_time_s";
  t.measured = 10;
  t.predicted = 8;
  CHECK(t.speed_error() == Approx(0.25));
  t.metric = "tokens_per_s_per_gpu";
  CHECK(t.speed_error() == Approx(-0.2));
  // MT-NLG's three rows are predicted 18-21% too fast (less time): the A100 16-bit regime's bias
  // counts them as +.
  double by_hand = 0;
  int n = 0;
  for (const auto& r : rows)
    if (r.checked && r.held_out && r.kind == RunKind::training && r.arch == Arch::ampere &&
        r.precision == Precision::bits16 && !r.moe) {
      by_hand += r.speed_error();
      ++n;
      if (r.family == "MT-NLG 530B") CHECK(r.speed_error() > 0);
    }
  CHECK(groups.front().held_out.bias == Approx(by_hand / n));
  // The JSON carries the same table; the text and markdown print it after the summaries.
  const auto j = nlohmann::json::parse(calibration_report(rows, "json"));
  REQUIRE(j.at("held_out_by_regime").size() == groups.size());
  CHECK(j.at("held_out_by_regime")[0].at("runs") == groups.front().held_out.runs);
  CHECK(j.at("held_out_by_regime")[0].at("precision") == "16-bit");
  const std::string md = calibration_report(rows, "markdown");
  CHECK(md.find("| held back, by regime | runs | mean error | worst | bias |") !=
        std::string::npos);
  CHECK(md.find("| training, hopper, fp8, dense | ") != std::string::npos);
}

TEST_CASE("held-back runs: the prediction error stays within the bound the README states") {
  // The rows no constant was chosen on (marked "holdout" in configs/calibration/runs.json). The
  // bound is today's error with a margin, so that a change that predicts worse fails here; the
  // goal is 5% mean and 12% worst (issue 9), not met yet: see the README.
  const CalibrationSummary s = summarize(run_calibration(Calibration{}));
  REQUIRE(s.held_out.runs >= 40);
  CHECK(s.held_out.mean <= 0.06);
  CHECK(s.held_out.worst <= 0.26);
  CHECK(s.fit.mean <= 0.03);
}

TEST_CASE("calibrate --explain: one row's prediction with the plan and evaluation it came from") {
  const Calibration cal;
  const auto all = run_calibration(cal);
  // Korthikanti's 22B row measures the step time: the explanation's evaluation is the figure.
  const RunExplanation x = explain_run(cal, "Korthikanti 22B, 8 x A100, full recompute");
  REQUIRE(x.eval);
  REQUIRE(x.cluster);
  CHECK(x.result.metric == "iteration_time_s");
  CHECK(x.eval->step_time == Approx(x.result.predicted).epsilon(1e-12));
  CHECK(x.plan.recompute == Recompute::full);
  CHECK(x.cluster->gpu_count() == x.plan.world());
  const auto row = std::find_if(
      all.begin(), all.end(), [&](const CalibrationResult& r) { return r.name == x.result.name; });
  REQUIRE(row != all.end());
  CHECK(row->predicted == x.result.predicted);
  CHECK(row->note == x.result.note);
  // A part of a name that one row contains finds it; a serving row carries its evaluation.
  const RunExplanation ttft = explain_run(cal, "GPT-J 6B time to first token, A100, TP 1, 2048");
  REQUIRE(ttft.serving_eval);
  CHECK(ttft.serving_eval->ttft * 1e3 == Approx(ttft.result.predicted).epsilon(1e-12));
  CHECK_FALSE(ttft.eval);
  // A collective row has no plan to show; none or several matches are input errors.
  CHECK_FALSE(explain_run(cal, "8 x A100 tiny all-reduce").eval);
  CHECK_THROWS_AS(explain_run(cal, "no such run"), InputError);
  CHECK_THROWS_AS(explain_run(cal, "Korthikanti"), InputError);
  const std::string text = run_explanation_report(x, cal, "table");
  CHECK_THAT(text, Catch::StartsWith("calibration run: Korthikanti 22B"));
  CHECK_THAT(text, Catch::Contains("where the time goes"));
}

TEST_CASE("expected error: the held-back runs of the same kind, widened when they are few") {
  const auto rows = run_calibration(Calibration{});
  // Recount by hand what accuracy_band states for one regime: held-back, checked, same kind,
  // architecture, precision and model type (dense or with experts).
  auto by_hand = [&](RunKind k, Arch a, std::optional<Precision> pr, bool moe = false) {
    std::vector<CalibrationResult> picked;
    for (const auto& r : rows)
      if (r.held_out && r.checked && r.kind == k && r.arch == a && (!pr || r.precision == *pr) &&
          r.moe == moe)
        picked.push_back(r);
    return summarize(picked).all;
  };
  const AccuracyBand h =
      accuracy_band({RunKind::training, Arch::hopper, Precision::fp8, false, ""}, Calibration{});
  REQUIRE(h.measured);
  CHECK(h.basis == "training, hopper, fp8, dense");
  CHECK(h.wanted == h.basis);  // not widened
  const ErrorSummary want = by_hand(RunKind::training, Arch::hopper, Precision::fp8);
  CHECK(h.held_out.runs == want.runs);
  CHECK(h.held_out.mean == Approx(want.mean));
  CHECK(h.held_out.worst == Approx(want.worst));
  CHECK(h.held_out.runs >= kMinBandRuns);
  // Its bias, recounted: + where topoplan predicts more throughput or less time than published.
  double signed_sum = 0;
  int n = 0;
  for (const auto& r : rows)
    if (r.held_out && r.checked && r.kind == RunKind::training && r.arch == Arch::hopper &&
        r.precision == Precision::fp8 && !r.moe) {
      const bool time = r.metric.ends_with("_s") || r.metric.ends_with("_ms");
      signed_sum += time ? r.measured / r.predicted - 1 : r.predicted / r.measured - 1;
      ++n;
    }
  REQUIRE(n == h.held_out.runs);
  CHECK(h.held_out.bias == Approx(signed_sum / n));
  CHECK(std::abs(h.held_out.bias) < h.held_out.mean);  // a bias is at most the mean error
  // An MoE model is measured on the MoE rows alone (DeepSeek-V3, the Qwen3 MoE rows), not on
  // the dense ones: a different error.
  const AccuracyBand moe =
      accuracy_band({RunKind::training, Arch::hopper, Precision::fp8, true, ""}, Calibration{});
  CHECK(moe.basis == "training, hopper, fp8, MoE");
  const ErrorSummary want_moe = by_hand(RunKind::training, Arch::hopper, Precision::fp8, true);
  CHECK(moe.held_out.runs == want_moe.runs);
  CHECK(moe.held_out.runs >= kMinBandRuns);
  CHECK(moe.held_out.worst == Approx(want_moe.worst));
  CHECK(moe.held_out.mean != Approx(h.held_out.mean));
  // Inference on Blackwell: no such held-back run, so the band widens to every dense inference
  // run (all of them are dense).
  const AccuracyBand b = accuracy_band(
      {RunKind::inference, Arch::blackwell, Precision::fp8, false, ""}, Calibration{});
  CHECK(by_hand(RunKind::inference, Arch::blackwell, std::nullopt).runs < kMinBandRuns);
  CHECK(b.basis == "inference, dense");
  CHECK(b.wanted == "inference, blackwell, fp8, dense");  // what was asked, and is not measured
  int inference = 0;
  for (const auto& r : rows) inference += r.held_out && r.checked && r.kind == RunKind::inference;
  CHECK(b.held_out.runs == inference);
  // Any other constant: the held-back rows measured the built-in ones, so nothing is claimed.
  Calibration other;
  other.hbm_efficiency = 0.7;
  CHECK_FALSE(is_builtin(other));
  CHECK_FALSE(
      accuracy_band({RunKind::training, Arch::hopper, Precision::fp8, false, ""}, other).measured);
  CHECK(is_builtin(Calibration{}));
}

TEST_CASE("expected error: a model whose published runs are shown, not checked, says so") {
  const auto rows = run_calibration(Calibration{});
  // Recount by hand: the training rows of gpt-oss-120b the corpus does not check.
  std::vector<double> errors;
  for (const auto& r : rows)
    if (!r.checked && r.kind == RunKind::training && r.model == "gpt-oss-120b")
      errors.push_back(std::abs(r.error()));
  REQUIRE(errors.size() >= 3);
  const AccuracyBand b = accuracy_band(
      {RunKind::training, Arch::blackwell_ultra, Precision::fp8, true, "gpt-oss-120b"},
      Calibration{});
  REQUIRE(b.measured);
  CHECK(b.model == "gpt-oss-120b");
  CHECK(b.known_gap.runs == static_cast<int>(errors.size()));
  CHECK(b.known_gap.worst == Approx(*std::max_element(errors.begin(), errors.end())));
  CHECK(b.known_gap.mean > 0.3);  // the gap the README names: far beyond the band's error
  CHECK(b.known_gap.mean > 3 * b.held_out.mean);
  // The band itself is the one every MoE model of that regime gets.
  const AccuracyBand qwen = accuracy_band(
      {RunKind::training, Arch::blackwell_ultra, Precision::fp8, true, "qwen3-30b-a3b"},
      Calibration{});
  CHECK(qwen.known_gap.runs == 0);
  CHECK(qwen.model.empty());
  CHECK(qwen.held_out.runs == b.held_out.runs);
  CHECK(qwen.held_out.mean == Approx(b.held_out.mean));
  // Serving the same model: its training rows are not a serving gap.
  CHECK(accuracy_band(
            {RunKind::inference, Arch::blackwell_ultra, Precision::fp8, true, "gpt-oss-120b"},
            Calibration{})
            .known_gap.runs == 0);
}

TEST_CASE("calibrate prints what the not-checked held-back rows miss by, beside the summary") {
  const auto rows = run_calibration(Calibration{});
  // Recount by hand: the held-back rows shown but not checked, and every held-back row.
  ErrorSummary unchecked, all;
  for (const auto& r : rows) {
    if (!r.held_out) continue;
    all.add(r);
    if (!r.checked) unchecked.add(r);
  }
  REQUIRE(unchecked.runs >= 7);  // three GPT-OSS rows, four MLPerf v6.0 DeepSeek-V3 GB200 rows
  const CalibrationSummary s = summarize(rows);
  CHECK(s.held_out_not_checked.runs == unchecked.runs);
  CHECK(s.held_out_not_checked.mean == Approx(unchecked.mean));
  CHECK(s.held_out_all.runs == s.held_out.runs + unchecked.runs);
  CHECK(s.held_out_all.mean == Approx(all.mean));
  CHECK(s.held_out_all.mean > s.held_out.mean);  // the rows left out are the ones missed
  const std::string text = calibration_report(rows, "table");
  CHECK(text.find(fmt::format("held back, not checked: {} runs; mean absolute error {:.2f}%",
                              unchecked.runs, 100 * unchecked.mean)) != std::string::npos);
  CHECK(text.find(fmt::format("counted with them, held back: mean {:.2f}%", 100 * all.mean)) !=
        std::string::npos);
  const auto j = nlohmann::json::parse(calibration_report(rows, "json"));
  CHECK(j.at("held_out_not_checked_runs") == unchecked.runs);
  CHECK(j.at("held_out_all_max_abs_error").get<double>() == Approx(all.worst));
}

TEST_CASE("expected error: a gap in some of a model's runs names them, not the whole model") {
  // DeepSeek-V3: four MLPerf v6.0 GB200 rows shown, not checked; its other rows checked.
  int missed = 0, checked = 0;
  for (const auto& r : run_calibration(Calibration{}))
    if (r.kind == RunKind::training && r.model == "deepseek-v3" && r.held_out)
      ++(r.checked ? checked : missed);
  REQUIRE(missed == 4);
  REQUIRE(checked >= 3);
  const AccuracyBand b = accuracy_band(
      {RunKind::training, Arch::hopper, Precision::fp8, true, "deepseek-v3"}, Calibration{});
  CHECK(b.known_gap.runs == missed);
  CHECK(b.model_checked_runs == checked);  // the report's line says so (test_report.cpp)
  // gpt-oss-120b has no checked run: the whole model is flagged.
  const AccuracyBand oss = accuracy_band(
      {RunKind::training, Arch::blackwell_ultra, Precision::fp8, true, "gpt-oss-120b"},
      Calibration{});
  CHECK(oss.known_gap.runs >= 3);
  CHECK(oss.model_checked_runs == 0);
}

TEST_CASE("the corpus: at least 40 training runs and 10 inference runs, each with its source") {
  int training = 0, inference = 0;
  for (const auto& r : run_calibration(Calibration{})) {
    CHECK(!r.source.empty());
    const bool collective = r.metric == "busbw_GBps" || r.metric == "time_us";
    const bool serving = r.metric == "end_to_end_ms" || r.metric == "ttft_ms";
    training += !collective && !serving;
    inference += serving;
  }
  CHECK(training >= 40);
  CHECK(inference >= 10);
}

TEST_CASE("calibrate --fit looks only at the fit rows, and the built-in constants are its result") {
  const auto fit_rows = run_calibration(Calibration{}, true);
  REQUIRE(!fit_rows.empty());
  for (const auto& r : fit_rows) CHECK(!r.held_out);
  // One constant from a wrong start: the fit moves it back to the built-in value, and the fit
  // rows' error comes down with it.
  Calibration off;
  off.gemm_efficiency_fp8[static_cast<int>(Arch::hopper)] = 0.3;
  std::vector<FittedConstant> keys;
  for (const auto& k : default_fitted_constants())
    if (k.key == "gemm_efficiency_fp8.hopper") keys.push_back(k);
  REQUIRE(keys.size() == 1);
  const CalibrationFit f = fit_calibration(off, keys);
  CHECK(f.constants[0].start == Approx(0.3));
  CHECK(f.constants[0].value ==
        Approx(Calibration{}.gemm_efficiency_fp8[static_cast<int>(Arch::hopper)]).epsilon(0.01));
  CHECK(f.fit_error_after < f.fit_error_before);
}

TEST_CASE(
    "Blackwell Ultra's FP8 efficiency is the fit on GB300 fit rows; the 25.11 rows are held back") {
  const auto gb300 = [](const CalibrationResult& r) {
    return r.family == "Megatron-Bridge" && r.name.find("GB300") != std::string::npos &&
           r.precision == Precision::fp8;
  };
  int fit = 0, held = 0;
  for (const auto& r : run_calibration_where(Calibration{}, gb300)) {
    CHECK(r.arch == Arch::blackwell_ultra);
    (r.held_out ? held : fit) += 1;
    // The fit rows come from a later container than every held-back one.
    CHECK(r.held_out == (r.source.find("25.11 NeMo container") != std::string::npos));
  }
  CHECK(fit == 2);
  CHECK(held == 3);
  // From Blackwell's value, the fit over the fit rows (every one of them, not the GB300 ones
  // only) lands on the built-in value, and the GB300 class is faster than Blackwell's.
  Calibration start;
  const int u = static_cast<int>(Arch::blackwell_ultra), b = static_cast<int>(Arch::blackwell);
  start.gemm_efficiency_fp8[u] = start.gemm_efficiency_fp8[b];
  std::vector<FittedConstant> keys;
  for (const auto& k : default_fitted_constants())
    if (k.key == "gemm_efficiency_fp8.blackwell_ultra") keys.push_back(k);
  REQUIRE(keys.size() == 1);
  const CalibrationFit f = fit_calibration(start, keys);
  CHECK(f.constants[0].constrained);
  CHECK(f.constants[0].value == Approx(Calibration{}.gemm_efficiency_fp8[u]).epsilon(0.01));
  CHECK(Calibration{}.gemm_efficiency_fp8[u] > Calibration{}.gemm_efficiency_fp8[b]);
}

TEST_CASE("NVFP4's efficiencies are fitted on one 405B row per architecture, checked elsewhere") {
  const RowFilter nvfp4 = [](const CalibrationResult& r) {
    return r.precision == Precision::nvfp4;
  };
  const auto rows = run_calibration_where(Calibration{}, nvfp4);
  int fit = 0, mlperf = 0;
  std::vector<CalibrationResult> held;
  for (const auto& r : rows) {
    CHECK((r.arch == Arch::blackwell || r.arch == Arch::blackwell_ultra));
    if (!r.held_out) {
      ++fit;
      CHECK(r.family == "Megatron-Bridge");
      CHECK_THAT(r.name, Catch::Contains("405B"));
    } else {
      held.push_back(r);
      mlperf += r.family == "MLPerf Training v5.1";
    }
  }
  CHECK(fit == 2);
  // Every MLPerf Training v5.1 Llama 3.1 405B result that ran NVFP4: another source family and
  // software than the fit rows; predicted within the corpus's held-back bound.
  CHECK(mlperf == 4);
  std::vector<CalibrationResult> mlperf_rows;
  for (const auto& r : held)
    if (r.family == "MLPerf Training v5.1") mlperf_rows.push_back(r);
  CHECK(summarize(mlperf_rows).all.mean <= 0.065);
  // From another start, the fit over the fit rows lands on the built-in values.
  Calibration start;
  start.gemm_efficiency_fp4 = {0.0, 0.0, 0.3, 0.3};
  std::vector<FittedConstant> keys;
  for (const auto& k : default_fitted_constants())
    if (k.key.rfind("gemm_efficiency_fp4.", 0) == 0) keys.push_back(k);
  REQUIRE(keys.size() == 2);
  const CalibrationFit f = fit_calibration(start, keys);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(f.constants[i].constrained);
    const int a = static_cast<int>(f.constants[i].key == "gemm_efficiency_fp4.blackwell"
                                       ? Arch::blackwell
                                       : Arch::blackwell_ultra);
    CHECK(f.constants[i].value == Approx(Calibration{}.gemm_efficiency_fp4[a]).epsilon(0.01));
  }
}

TEST_CASE("cross-validation: each family predicted by constants fitted on the others only") {
  // Quick rows only (serving latencies and collectives, no plan search), one key: TensorRT-LLM's
  // per-layer overhead, which both TensorRT-LLM families' rows respond to and the NCCL rows do
  // not.
  const std::vector<std::string> quick = {"NeMo docs (TensorRT-LLM)", "TensorRT-LLM performance.md",
                                          "nccl-tests / nccl issues"};
  const RowFilter rows = [&](const CalibrationResult& r) {
    return std::find(quick.begin(), quick.end(), r.family) != quick.end();
  };
  std::vector<FittedConstant> keys;
  for (const auto& k : default_fitted_constants())
    if (k.key == "decode_layer_overhead_us") keys.push_back(k);
  REQUIRE(keys.size() == 1);
  const CrossValidation cv = cross_validate(Calibration{}, keys, 2, rows);
  REQUIRE(cv.folds.size() == quick.size());
  // Every selected row lands in exactly one fold, its own family's.
  const auto all = run_calibration_where(Calibration{}, rows);
  CHECK(cv.error.runs == summarize(all).all.runs);
  std::size_t n = 0;
  for (const auto& f : cv.folds) {
    for (const auto& r : f.rows) CHECK(r.family == f.family);
    n += f.rows.size();
  }
  CHECK(n == all.size());
  auto fold = [&](const std::string& name) {
    auto it = std::find_if(cv.folds.begin(), cv.folds.end(),
                           [&](const auto& f) { return f.family == name; });
    REQUIRE(it != cv.folds.end());
    return *it;
  };
  // Without the NeMo decode rows the overhead is set by the time-to-first-token rows alone, to
  // a value of its own; the NCCL rows do not depend on it at all.
  const CrossValidationFold decode = fold("NeMo docs (TensorRT-LLM)");
  CHECK(decode.constants[0].constrained);
  CHECK(decode.constants[0].value != Approx(decode.constants[0].start));
  CHECK(fold("nccl-tests / nccl issues").error.mean < 0.02);
  // A fold's rows are the ordinary prediction with that fold's constant.
  Calibration with;
  with.decode_layer_overhead[static_cast<int>(Runtime::tensorrt_llm)] =
      decode.constants[0].value * 1e-6;
  const auto again = run_calibration_where(
      with, [](const CalibrationResult& r) { return r.family == "NeMo docs (TensorRT-LLM)"; });
  REQUIRE(again.size() == decode.rows.size());
  for (std::size_t i = 0; i < again.size(); ++i)
    CHECK(again[i].predicted == Approx(decode.rows[i].predicted));
}

TEST_CASE("cross-validation: an error in a fold reaches the caller, from any thread") {
  const RowFilter nccl = [](const CalibrationResult& r) {
    return r.family == "nccl-tests / nccl issues" || r.family == "NeMo docs (TensorRT-LLM)";
  };
  const std::vector<FittedConstant> bad = {{"no_such_constant", 0, 0, 0, 1}};
  CHECK_THROWS_WITH(cross_validate(Calibration{}, bad, 2, nccl),
                    Catch::Contains("no calibration constant 'no_such_constant'"));
}

TEST_CASE("a constant no selected row responds to keeps its value, marked unconstrained") {
  std::vector<FittedConstant> keys;
  for (const auto& k : default_fitted_constants())
    if (k.key == "attention_efficiency_fa2.hopper") keys.push_back(k);
  REQUIRE(keys.size() == 1);
  // The NCCL measurements run no attention at all.
  const CalibrationFit f = fit_calibration(Calibration{}, keys, [](const CalibrationResult& r) {
    return r.family == "nccl-tests / nccl issues";
  });
  CHECK_FALSE(f.constants[0].constrained);
  CHECK(f.constants[0].value == f.constants[0].start);
}

TEST_CASE("calibration files override constants by key, and warn about unknown keys") {
  Calibration c;
  apply_calibration_json(R"({"gemm_efficiency.hopper": 0.5, "link.nvlink4.step_latency_us": 1.5,
                             "reserved_GiB": 4})",
                         "cal.json", c);
  CHECK(c.gemm_efficiency[static_cast<int>(Arch::hopper)] == 0.5);
  CHECK(c.links[static_cast<int>(Link::nvlink4)].step_latency == Approx(1.5e-6));
  CHECK(c.reserved_bytes == Approx(4.0 * 1024 * 1024 * 1024));
  // Unknown keys: one warning each, the closest key named; nothing changes (the policy every
  // topoplan format follows).
  std::vector<std::string> warnings;
  set_warning_sink([&](const std::string& m) { warnings.push_back(m); });
  const Calibration before = c;
  apply_calibration_json(R"({"gemm_eff": 1, "hbm_efficency": 0.1})", "cal.json", c);
  set_warning_sink(nullptr);
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0] ==
        "cal.json: gemm_eff: unknown key, ignored (did you mean "
        "`gemm_efficiency.ampere`?); topoplan calibrate --constants lists the keys");
  CHECK(warnings[1] ==
        "cal.json: hbm_efficency: unknown key, ignored (did you mean "
        "`hbm_efficiency`?); topoplan calibrate --constants lists the keys");
  CHECK(c.hbm_efficiency == before.hbm_efficiency);
  CHECK_THROWS_WITH(
      apply_calibration_json(R"({"hbm_efficiency": "x"})", "cal.json", c),
      "cal.json: hbm_efficiency: expected a number from 1e-06 to 1 (fraction of HBM bandwidth), "
      "got \"x\"");
  // Efficiencies divide: 0 would make every kernel take forever (issue 11, numeric safety).
  CHECK_THROWS_WITH(apply_calibration_json(R"({"gemm_efficiency.hopper": 0})", "cal.json", c),
                    "cal.json: gemm_efficiency.hopper: expected a number from 1e-06 to 1 "
                    "(fraction of dense peak), got 0");
}

namespace {

using test::eval;

Plan plan(int tp, int pp, int dp, int mb, Recompute r, int vpp = 1) {
  Plan p;
  p[Dim::tp] = tp;
  p[Dim::pp] = pp;
  p[Dim::dp] = dp;
  p.micro_batch = mb;
  p.recompute = r;
  p.vpp = vpp;
  return p;
}

JobSpec gpt3_job(std::int64_t gbs) {
  JobSpec j;
  j.seq_len = 2048;
  j.global_batch = gbs;
  return j;
}

}  // namespace

TEST_CASE("qualitative: TP beyond one server collapses throughput") {
  // GPT-3 175B on 64 A100s (as Megatron-LM SC'21 Figure 13): TP 8 inside a server, 16 and 32
  // across servers.
  Cluster c = test::preset_cluster("dgx-a100", 8);
  Model m = test::preset_model("gpt3-175b");
  JobSpec j = gpt3_job(512);
  const double t8 = eval(c, m, j, plan(8, 8, 1, 1, Recompute::full)).model_flops_per_gpu;
  const double t16 = eval(c, m, j, plan(16, 4, 1, 1, Recompute::full)).model_flops_per_gpu;
  const double t32 = eval(c, m, j, plan(32, 2, 1, 1, Recompute::full)).model_flops_per_gpu;
  CHECK(t16 < 0.85 * t8);
  CHECK(t32 < 0.65 * t8);
}

TEST_CASE("qualitative: interleaving helps most at small batch") {
  Cluster c = test::preset_cluster("dgx-a100", 8);
  Model m = test::preset_model("gpt3-175b");
  auto gain = [&](std::int64_t gbs) {
    JobSpec j = gpt3_job(gbs);
    const double plain = eval(c, m, j, plan(8, 8, 1, 1, Recompute::full, 1)).step_time;
    const double inter = eval(c, m, j, plan(8, 8, 1, 1, Recompute::full, 4)).step_time;
    return plain / inter - 1.0;
  };
  const double small = gain(32), large = gain(512);
  CHECK(small > 0.10);
  CHECK(large > 0);
  CHECK(small > 4 * large);
}

TEST_CASE("qualitative: selective recomputation beats full when memory allows") {
  Cluster c = test::preset_cluster("dgx-a100", 8);
  Model m = test::preset_model("gpt3-175b");
  JobSpec j = gpt3_job(512);
  Plan sel = plan(8, 8, 1, 1, Recompute::selective);
  sel.sequence_parallel = true;
  Plan full = sel;
  full.recompute = Recompute::full;
  Evaluation es = eval(c, m, j, sel), ef = eval(c, m, j, full);
  REQUIRE(es.fits);
  CHECK(es.step_time < 0.85 * ef.step_time);
  CHECK(ef.memory.activations < es.memory.activations);
}

TEST_CASE("qualitative: a large model on 64 GPUs wants a small micro-batch, not the largest") {
  // GPT-3 175B on 64 A100s with Megatron-style TP 8 x PP 8: a larger micro-batch means fewer
  // microbatches and a longer pipeline bubble.
  Cluster c = test::preset_cluster("dgx-a100", 8);
  Model m = test::preset_model("gpt3-175b");
  JobSpec j = gpt3_job(512);
  SearchOptions o;
  o.fixed[Dim::tp] = 8;
  o.fixed[Dim::pp] = 8;
  o.recompute = Recompute::full;
  o.top_k = 200;
  SearchResult r = search(c, m, j, Calibration{}, o);
  REQUIRE_FALSE(r.top.empty());
  CHECK(r.top.front().plan.micro_batch <= 4);
  int largest = 0;
  for (const auto& cand : r.top) largest = std::max(largest, cand.plan.micro_batch);
  CHECK(largest > r.top.front().plan.micro_batch);  // larger ones fit, and rank lower
}

TEST_CASE(
    "calibrate --runs: a user's own runs are predicted as the published ones, and fitted on") {
  const RunCorpus mine =
      load_runs_file(std::string(TOPOPLAN_SOURCE_DIR) + "/examples/runs/llama3.1-405b-h100.json");
  const auto rows = run_calibration(Calibration{}, false, mine);
  REQUIRE(rows.size() == 5);
  // The example holds NVIDIA's MLPerf v5.0 H100 rows under other names: each predicts what the
  // built-in row with the same measurement predicts.
  const auto builtin = run_calibration_where(Calibration{}, [](const CalibrationResult& r) {
    return r.family == "MLPerf Training v5.0" && r.name.find("H100") != std::string::npos;
  });
  REQUIRE(builtin.size() == 5);
  for (const auto& r : rows) {
    INFO(r.name);
    CHECK(r.family == "my runs");
    const auto same = std::find_if(builtin.begin(), builtin.end(), [&](const CalibrationResult& b) {
      return b.measured == r.measured;
    });
    REQUIRE(same != builtin.end());
    CHECK(r.predicted == Approx(same->predicted).epsilon(1e-12));
  }
  // --fit looks at the file's two fit rows only, and its fit carries to the three held back.
  std::vector<FittedConstant> keys;
  for (const auto& k : default_fitted_constants())
    if (k.key == "gemm_efficiency_fp8.hopper") keys.push_back(k);
  std::vector<std::string> seen;
  const CalibrationFit f = fit_calibration(
      Calibration{}, keys,
      [&](const CalibrationResult& r) {
        seen.push_back(r.name);
        return !r.held_out;
      },
      mine);
  CHECK(!seen.empty());
  CHECK(std::all_of(seen.begin(), seen.end(),
                    [](const std::string& n) { return n.rfind("Llama 3.1 405B, ", 0) == 0; }));
  CHECK(f.constants[0].value > Calibration{}.gemm_efficiency_fp8[static_cast<int>(Arch::hopper)]);
  CHECK(f.fit_error_after < f.fit_error_before);
  const CalibrationSummary before = summarize(rows);
  const CalibrationSummary after = summarize(run_calibration(f.cal, false, mine));
  CHECK(after.held_out.runs == 3);
  CHECK(after.held_out.mean < before.held_out.mean / 2);
  // A bad row names the file and the row; the built-in corpus is untouched by any of it.
  RunCorpus bad = mine;
  bad.source = "mine.json";
  bad.text.replace(bad.text.find("\"tp\": 8"), 7, "\"tp\": 3");
  CHECK_THROWS_WITH(run_calibration(Calibration{}, false, bad),
                    Catch::StartsWith("mine.json: runs[0]: tp: 3 does not divide"));
  // The published corpus uses only keys the runs format knows (a user's file gets a warning per
  // unknown key, so a typo in an overlap flag is not a silent default).
  std::vector<std::string> warnings;
  set_warning_sink([&](const std::string& w) { warnings.push_back(w); });
  warn_unknown_run_keys(builtin_runs());
  RunCorpus typo = mine;
  typo.source = "typo.json";
  typo.text.replace(typo.text.find("\"fp8_param_gather\""), 18, "\"fp8_param_gathr\"");
  warn_unknown_run_keys(typo);
  set_warning_sink(nullptr);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("typo.json: runs[0].job.fp8_param_gathr: unknown key"));
  const auto published_fit = run_calibration(Calibration{}, true);
  CHECK(std::none_of(published_fit.begin(), published_fit.end(),
                     [](const CalibrationResult& r) { return r.family == "my runs"; }));
}

TEST_CASE("the MoE constants are fitted on one B200 row each; the other MoE rows check them") {
  const RowFilter moe = [](const CalibrationResult& r) { return r.moe && r.checked; };
  const auto rows = run_calibration_where(Calibration{}, moe);
  std::vector<std::string> fit;
  for (const auto& r : rows)
    if (!r.held_out) fit.push_back(r.name);
  REQUIRE(fit.size() == 2);
  CHECK_THAT(fit[0], Catch::Contains("Qwen3 30B-A3B MXFP8, 8 x B200"));
  CHECK_THAT(fit[1], Catch::Contains("Qwen3 235B-A22B MXFP8, 256 x B200"));
  // The graphed Blackwell rows read the routed-copy bytes only, and stay within 10% held back.
  int graphed = 0;
  for (const auto& r : rows) {
    INFO(r.name);
    if (!r.held_out || r.arch == Arch::hopper || r.arch == Arch::ampere) continue;
    CHECK(std::abs(r.error()) <= 0.10);
    ++graphed;
  }
  CHECK(graphed == 6);
  // Fitted one after the other from zero, the host time first (the eager fit row waits on its
  // host, so it does not read the copy bytes after; the graphed one never waits), the two land on
  // the built-in values. The other order stalls: the copy bytes alone would fit both rows' gaps.
  Calibration start;
  start.moe_routed_copy_bytes = 0;
  start.moe_layer_host = 0;
  for (const char* key : {"moe_layer_host_ms", "moe_routed_copy_bytes"}) {
    std::vector<FittedConstant> keys;
    for (const auto& k : default_fitted_constants())
      if (k.key == key) keys.push_back(k);
    REQUIRE(keys.size() == 1);
    const CalibrationFit f = fit_calibration(start, keys);
    CHECK(f.constants[0].constrained);
    start = f.cal;
  }
  CHECK(start.moe_routed_copy_bytes == Approx(Calibration{}.moe_routed_copy_bytes).epsilon(0.01));
  CHECK(start.moe_layer_host == Approx(Calibration{}.moe_layer_host).epsilon(0.01));
}

TEST_CASE("calibrate --runs: server_gpus runs on part of each server, at most all of it") {
  const std::string row = R"({"schema": "topoplan.calibration-runs/v1", "runs": [{
    "name": "r", "source": "s", "family": "f", "cluster": "gb200-nvl72", "nodes": 4,
    "server_gpus": 64, "model": "llama3-70b",
    "job": {"seq_len": 8192, "global_batch": 256, "dtype": "bf16", "gpus": 256},
    "plan": {"tp": 4, "pp": 4, "dp": 16, "recompute": "search", "micro_batch": 1, "vpp": 1},
    "measured": {"metric": "tokens_per_s_per_gpu", "value": 1000}, "role": "holdout"}]})";
  const RunCorpus mine{row, "mine.json"};
  const auto rows = run_calibration(Calibration{}, false, mine);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].predicted > 0);
  RunCorpus big = mine;
  big.text.replace(big.text.find("\"server_gpus\": 64"), 17, "\"server_gpus\": 80");
  CHECK_THROWS_WITH(
      run_calibration(Calibration{}, false, big),
      Catch::StartsWith("mine.json: runs[0].server_gpus: expected at most the 72 GPUs "
                        "a gb200-nvl72 server holds, got 80"));
}
