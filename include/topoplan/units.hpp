#pragma once
/// SI units inside the code: seconds, bytes, bytes/s, FLOP/s. Human units exist only at the edges,
/// and these helpers are the one place they are converted.

namespace topoplan::units {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// GB/s (10^9 bytes per second) to bytes/s.
[[nodiscard]] constexpr double from_GBps(double v) { return v * 1e9; }
/// Gb/s (10^9 bits per second) to bytes/s.
[[nodiscard]] constexpr double from_Gbps(double v) { return v * 1e9 / 8.0; }
/// Microseconds to seconds.
[[nodiscard]] constexpr double from_us(double v) { return v * 1e-6; }
/// TFLOP/s to FLOP/s.
[[nodiscard]] constexpr double from_TFLOPs(double v) { return v * 1e12; }
/// TB/s to bytes/s.
[[nodiscard]] constexpr double from_TBps(double v) { return v * 1e12; }
/// GiB to bytes.
[[nodiscard]] constexpr double from_GiB(double v) { return v * kGiB; }

[[nodiscard]] constexpr double to_GBps(double bytes_per_s) { return bytes_per_s / 1e9; }
[[nodiscard]] constexpr double to_Gbps(double bytes_per_s) { return bytes_per_s * 8.0 / 1e9; }
[[nodiscard]] constexpr double to_TBps(double bytes_per_s) { return bytes_per_s / 1e12; }
[[nodiscard]] constexpr double to_us(double s) { return s * 1e6; }
[[nodiscard]] constexpr double to_ms(double s) { return s * 1e3; }
[[nodiscard]] constexpr double to_TFLOPs(double flops) { return flops / 1e12; }
[[nodiscard]] constexpr double to_GiB(double bytes) { return bytes / kGiB; }

}  // namespace topoplan::units
