#include "topoplan/calibration.hpp"

#include "topoplan/units.hpp"

namespace topoplan {

std::vector<CalibrationRow> calibration_table(const Calibration& c) {
  return {
      {"compute_efficiency", c.compute_efficiency, "fraction of dense peak",
       "Megatron-LM SC'21 Table 1: 44-52% of peak end to end, including communication and "
       "bubble; the GEMM-only fraction is set above that"},
      {"intra_server_bw_fraction", c.intra_server_bw_fraction, "fraction of NVLink line rate",
       "nccl-tests issue 212: ~370 of 450 GB/s ring busbw on 8 x H100"},
      {"inter_server_bw_fraction", c.inter_server_bw_fraction, "fraction of NIC line rate",
       "nccl-tests issue 175: 86 of 100 GB/s busbw, 2 nodes x 4 HDR"},
      {"grad_reduce_bytes", c.grad_reduce_bytes, "bytes per parameter",
       "Megatron-LM reduces bf16 training's gradients in fp32 (main_grad buffers)"},
      {"dp_bucket_params", c.dp_bucket_params, "parameters",
       "Megatron-LM DDP default bucket size, 40M parameters"},
      {"optimizer_bytes_per_param", c.optimizer_bytes_per_param, "bytes of HBM traffic",
       "Adam: read grad, param, m, v (fp32) and write param, m, v, bf16 copy"},
      {"reserved_GiB", units::to_GiB(c.reserved_bytes), "GiB per GPU",
       "CUDA context, NCCL buffers, cuBLAS workspace, allocator fragmentation (estimate)"},
  };
}

}  // namespace topoplan
