#pragma once
/// The linear layers' matrix multiplies one at a time: how close a GEMM of a given shape comes to
/// the calibrated efficiency, and the FP8 casts that feed them. The shape rule applies to FP8
/// GEMMs on Hopper (the measurements it is fitted to); 16-bit GEMMs and other architectures keep
/// the one-dimension size rule of Calibration::gemm_half_dim.

#include "topoplan/job.hpp"
#include "topoplan/topology.hpp"

namespace topoplan {

struct Model;
struct Calibration;

/// Fraction of its ceiling a GEMM with `rows` output rows, `cols` output columns and reduction
/// length `depth` reaches: rows / (rows + r0) x cols / (cols + c0) x depth / (depth + d0), 1 for
/// large ones (Calibration::gemm_half_rows, gemm_half_cols, gemm_half_depth).
[[nodiscard]] double gemm_shape_fraction(const Calibration& cal, double rows, double cols,
                                         double depth);

/// Whether the FP8 shape rule has measurements for this architecture: Hopper's (the table is
/// H800's). Other architectures' FP8 GEMMs keep the one-dimension size rule.
[[nodiscard]] bool fp8_gemm_shapes_measured(Arch a);

/// Seconds per FLOP of one layer's linear layers on one GPU, by pass, each of the four GEMMs
/// (QKV, attention output, MLP input, MLP output) at its own shape and weighted by its FLOPs.
struct LinearPassTimes {
  double forward = 0;  ///< also a recomputed forward
  double data_grad = 0;
  double weight_grad = 0;
};

/// The shapes on one GPU: `tokens` rows per micro-batch (sequence parallelism gathers them
/// all); tensor parallelism `tp` splits the weights' other dimension. Under TP overlap
/// (`chunks` > 1) Transformer Engine's userbuffers run the forward GEMMs, and the data
/// gradients of the attention-output and MLP-output projections, on `chunks` slices of the rows
/// (ring exchange; the NeMo / MLPerf configs' tp_overlap/*.yaml); the weight gradients reduce
/// over all the rows. `rate` is the GEMM ceiling in FLOP/s (peak x calibrated efficiency).
[[nodiscard]] LinearPassTimes linear_pass_times(const Model& m, double tp, double tokens,
                                                double chunks, const Calibration& cal, double rate);

/// The same for FP8 GEMMs on architecture `a`: by shape where it has measurements
/// (fp8_gemm_shapes_measured), else every pass at `rate` x `size`, the one-dimension size rule's
/// fraction (Calibration::gemm_half_dim).
[[nodiscard]] LinearPassTimes fp8_linear_pass_times(Arch a, const Model& m, double tp,
                                                    double tokens, double chunks,
                                                    const Calibration& cal, double rate,
                                                    double size);

/// Every pass at `rate` x `size` (the one-dimension size rule): FP8 GEMMs without shape
/// measurements, and NVFP4 GEMMs (none measured).
[[nodiscard]] LinearPassTimes size_rule_pass_times(double rate, double size);

/// HBM bytes per token per layer on one GPU of a low-precision training's quantizations
/// (Transformer Engine's recipes; 0 for 16-bit training). fp8: the attention output cast and
/// transposed before its projection and the four GEMMs' output gradients cast and transposed in
/// the backward (Calibration::fp8_cast_transpose_bytes); the norm-fused FP8 inputs of the QKV and
/// MLP-input GEMMs and the activation-fused input of the MLP output transposed for the weight
/// gradients (fp8_transpose_bytes). nvfp4 and mxfp8: the same tensors, those quantized both ways
/// again both ways (nvfp4_/mxfp8_cast_transpose_bytes), those FP8 only transposes quantized
/// column-wise again from 16-bit (nvfp4_/mxfp8_requantize_bytes): one-dimensional block scales
/// cannot be transposed.
[[nodiscard]] double quantization_bytes(const Model& m, double tp, const Calibration& cal, Dtype d);

}  // namespace topoplan
