#include "topoplan/gemm.hpp"

#include <array>

#include "topoplan/calibration.hpp"
#include "topoplan/model.hpp"

namespace topoplan {

double gemm_shape_fraction(const Calibration& cal, double rows, double cols, double depth) {
  return rows / (rows + cal.gemm_half_rows) * cols / (cols + cal.gemm_half_cols) * depth /
         (depth + cal.gemm_half_depth);
}

bool fp8_gemm_shapes_measured(Arch a) { return a == Arch::hopper; }

namespace {

/// One linear layer's weight on one GPU: its output width and its reduction length (the
/// forward's N and K), and whether TP overlap slices the rows of its data gradient.
struct Weight {
  double out, in;
  bool sliced_data_grad;
};

std::array<Weight, 4> layer_weights(const Model& m, double tp) {
  const auto& k = m.counts;
  const double h = static_cast<double>(m.spec.hidden);
  const double mlp_in = (m.spec.gated_mlp ? 2.0 : 1.0) * k.min_ffn / tp;
  return {{{(k.q_dim + 2 * k.kv_dim) / tp, h, false},
           {h, k.q_dim / tp, true},
           {mlp_in, h, false},
           {h, k.min_ffn / tp, true}}};
}

}  // namespace

LinearPassTimes linear_pass_times(const Model& m, double tp, double tokens, double chunks,
                                  const Calibration& cal, double rate) {
  const auto weights = layer_weights(m, tp);
  double flops = 0;
  for (const auto& w : weights) flops += w.out * w.in;
  const double slice = tokens / chunks;
  LinearPassTimes t;
  for (const auto& w : weights) {
    const double share = w.out * w.in / flops / rate;
    t.forward += share / gemm_shape_fraction(cal, slice, w.out, w.in);
    t.data_grad +=
        share / gemm_shape_fraction(cal, w.sliced_data_grad ? slice : tokens, w.in, w.out);
    t.weight_grad += share / gemm_shape_fraction(cal, w.in, w.out, tokens);
  }
  return t;
}

LinearPassTimes fp8_linear_pass_times(Arch a, const Model& m, double tp, double tokens,
                                      double chunks, const Calibration& cal, double rate,
                                      double size) {
  if (fp8_gemm_shapes_measured(a)) return linear_pass_times(m, tp, tokens, chunks, cal, rate);
  return size_rule_pass_times(rate, size);
}

LinearPassTimes size_rule_pass_times(double rate, double size) {
  const double flat = 1 / (rate * size);
  return {flat, flat, flat};
}

namespace {

/// Elements per token per layer on one GPU that are cast both ways (`both`) and that are only
/// transposed (`transposed`).
struct CastElements {
  double both = 0;
  double transposed = 0;
};

CastElements cast_elements(const Model& m, double tp) {
  const auto w = layer_weights(m, tp);
  // Cast and transposed: the attention output (the projection's input) and every GEMM's output
  // gradient; the hidden-width ones are whole rows on every GPU (sequence parallelism gathers
  // them). Transposed only: the inputs a norm (QKV, MLP input) or the activation (MLP output)
  // already wrote in FP8.
  CastElements e;
  e.both = w[1].in;
  for (const auto& x : w) e.both += x.out;
  e.transposed = w[0].in + w[2].in + w[3].in;
  return e;
}

}  // namespace

double quantization_bytes(const Model& m, double tp, const Calibration& cal, Dtype d) {
  const CastElements e = cast_elements(m, tp);
  switch (d) {
    case Dtype::fp8:
      return cal.fp8_cast_transpose_bytes * e.both + cal.fp8_transpose_bytes * e.transposed;
    case Dtype::nvfp4:
      return cal.nvfp4_cast_transpose_bytes * e.both + cal.nvfp4_requantize_bytes * e.transposed;
    case Dtype::mxfp8:
      return cal.mxfp8_cast_transpose_bytes * e.both + cal.mxfp8_requantize_bytes * e.transposed;
    case Dtype::bf16:
    case Dtype::fp16: return 0.0;
  }
  return 0.0;
}

}  // namespace topoplan
