#pragma once
/// Every tunable constant of the cost model, in one table, with its unit and source.
#include <string>
#include <vector>

namespace topoplan {

struct Calibration {
  /// Fraction of the GPU's dense peak that a transformer layer's matrix multiplies reach.
  double compute_efficiency = 0.62;
  /// Achieved fraction of line rate for NVLink/NVSwitch transfers inside a server.
  double intra_server_bw_fraction = 0.82;
  /// Achieved fraction of line rate for transfers that leave the server (IB/RoCE).
  double inter_server_bw_fraction = 0.86;
  /// Bytes per parameter of the gradients that data parallelism reduces (fp32 main grads).
  double grad_reduce_bytes = 4.0;
  /// Gradient bucket size, parameters; the last bucket cannot overlap the backward pass.
  double dp_bucket_params = 40e6;
  /// Bytes of HBM traffic per parameter in the optimizer step (Adam, fp32 state).
  double optimizer_bytes_per_param = 36.0;
  /// Memory every GPU loses to the CUDA context, NCCL buffers, workspace and fragmentation.
  double reserved_bytes = 3.0 * 1024 * 1024 * 1024;
};

/// One row of the documented table.
struct CalibrationRow {
  std::string key;
  double value;
  std::string unit;
  std::string source;
};

[[nodiscard]] std::vector<CalibrationRow> calibration_table(const Calibration& c);

}  // namespace topoplan
