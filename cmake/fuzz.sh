#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz/ and runs each for
# FUZZ_SECONDS (default 20), seeded from the repository's own inputs; any crash, leak, timeout
# or sanitizer report fails. Needs clang and libclang-rt-14-dev (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi
seconds=${FUZZ_SECONDS:-20}
CXX=clang++ CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOPOPLAN_FUZZ=ON \
  -DTOPOPLAN_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" >&2
seed_dir=$(mktemp -d)
trap 'rm -rf "$seed_dir"' EXIT
declare -A seeds=(
  [cluster]="configs/clusters/*.json examples/clusters/*.json tests/data/six-gpu-servers.json tests/data/bad/cluster-*.json tests/data/bad/negative-bandwidth.json"
  [model]="configs/models/*.json examples/models/*/config.json tests/data/gpt2/config.json tests/data/bad/config*.json"
  [calibration]="tests/data/bad/calibration.json"
  [ranks]="tests/data/ranks-*.json tests/data/bad/ranks-*.json"
  [plan]="tests/golden/*.out"
  [megatron]=""
  [nvidia_smi]="tests/data/nvidia-smi/* tests/data/bad/smi-*.txt"
  [nccl_tests]="tests/data/nccl-tests/*"
  [nccl_xml]="tests/data/nccl-xml/*"
)
for parser in cluster model calibration ranks plan megatron nvidia_smi nccl_tests nccl_xml; do
  dir="$seed_dir/$parser"
  mkdir -p "$dir"
  for f in ${seeds[$parser]}; do
    if [[ -f $f ]]; then cp "$f" "$dir/"; fi
  done
  if [[ $parser == megatron ]]; then
    printf -- '--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 --use-tp-pp-dp-mapping' >"$dir/args"
  fi
  if [[ $parser == calibration ]]; then
    printf '{"gemm_efficiency.hopper": 0.6, "link.infiniband.bw_fraction": 0.8}' >"$dir/cal.json"
  fi
  echo "fuzz_$parser: ${seconds} s from $(ls "$dir" | wc -l) seeds" >&2
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 \
    "build-fuzz/tests/fuzz/fuzz_$parser" -max_total_time="$seconds" -seed=1 -timeout=5 -artifact_prefix=build-fuzz/ -rss_limit_mb=2048 \
    -print_final_stats=0 "$dir" 2>"$seed_dir/$parser.log" ||
    { tail -n 40 "$seed_dir/$parser.log"; echo "fuzz_$parser failed" >&2; exit 1; }
done
echo "fuzzers: no crash, leak, timeout or sanitizer report"
