#!/usr/bin/env bash
# Builds and runs the benchmarks (bench/), reporting medians of 5 repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! dpkg-query -W -f='${Status}' libbenchmark-dev 2>/dev/null | grep -q "install ok installed"; then
  [ "$(id -u)" -eq 0 ] || { echo "bench: install libbenchmark-dev (as root)" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libbenchmark-dev >/dev/null
fi
TOPOPLAN_CMAKE_ARGS="-DTOPOPLAN_BUILD_BENCH=ON" bash cmake/setup.sh
build/bench/topoplan_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_display_aggregates_only=true "$@"
