#pragma once
/// The published measurements topoplan is checked against (configs/calibration/runs.json,
/// compiled in): each is re-predicted with the current calibration and compared.
#include <string>
#include <vector>

#include "topoplan/calibration.hpp"

namespace topoplan {

struct CalibrationResult {
  std::string name;
  std::string source;
  std::string metric;  ///< hardware_tflops_per_gpu, iteration_time_s, busbw_GBps, time_us
  double measured = 0;
  double predicted = 0;
  bool checked = true;  ///< counted in the accuracy claim (false: shown, with the reason)
  std::string note;     ///< the plan found, or why a row is not checked
  [[nodiscard]] double error() const { return predicted / measured - 1.0; }
};

/// Re-predicts every run with `cal`.
[[nodiscard]] std::vector<CalibrationResult> run_calibration(const Calibration& cal);

/// The error table: "table" (aligned text), "markdown" (for the README) or "json".
[[nodiscard]] std::string calibration_report(const std::vector<CalibrationResult>& r,
                                             const std::string& format);

}  // namespace topoplan
