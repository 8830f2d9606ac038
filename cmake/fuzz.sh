#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz/ (or FUZZ_BUILD_DIR) and runs each for
# FUZZ_SECONDS (default 20), one per core at a time, seeded from the repository's own inputs; any
# crash, leak, timeout or sanitizer report fails. Needs clang and libclang-rt-14-dev (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/need-clang.sh
seconds=${FUZZ_SECONDS:-20}
parsers=(cluster model calibration ranks plan megatron nvidia_smi nccl_tests nccl_xml slurm runs)
# FUZZ_BUILD_DIR: a build configured with -DTOPOPLAN_FUZZ=ON already (cmake/sanitize.sh's
# build-asan, as CI runs it). Otherwise build-fuzz/: -O1 with line tables only, quick to build,
# reports still name the file and line; only the fuzz targets (and the library) are built.
build=${FUZZ_BUILD_DIR:-build-fuzz}
if [[ -z ${FUZZ_BUILD_DIR:-} ]]; then
  CXX=clang++ CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Fuzz \
    -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" -DTOPOPLAN_FUZZ=ON -DTOPOPLAN_BUILD_TESTS=OFF \
    >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target "${parsers[@]/#/fuzz_}" >&2
seed_dir=$(mktemp -d)
trap 'rm -rf "$seed_dir"' EXIT
declare -A seeds=(
  [cluster]="configs/clusters/*.json examples/clusters/*.json tests/data/nvl72-trays.json tests/data/six-gpu-servers.json tests/data/eight-and-four-gpu-servers.json tests/data/bad/cluster-*.json tests/data/bad/negative-bandwidth.json"
  [model]="configs/models/*.json examples/models/*/config.json tests/data/gpt2/config.json tests/data/bad/config*.json"
  [calibration]="tests/data/bad/calibration.json"
  [ranks]="tests/data/ranks-*.json tests/data/bad/ranks-*.json"
  [plan]="tests/golden/*.out"
  [megatron]=""
  [nvidia_smi]="tests/data/nvidia-smi/* tests/data/bad/smi-*.txt"
  [nccl_tests]="tests/data/nccl-tests/*"
  [nccl_xml]="tests/data/nccl-xml/*"
  [slurm]="tests/data/slurm/*"
  [runs]="tests/data/runs/*.json examples/runs/*.json configs/calibration/runs.json"
)
for parser in "${parsers[@]}"; do
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
done
# One fuzzer per core at a time (each is single-threaded); each leaves its exit status in a
# file, and any failure fails the run.
run_one() {
  local parser=$1 dir="$seed_dir/$1" status=0
  echo "fuzz_$parser: ${seconds} s from $(ls "$dir" | wc -l) seeds" >&2
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 \
    "$build/tests/fuzz/fuzz_$parser" -max_total_time="$seconds" -seed=1 -timeout=5 \
    -artifact_prefix="$build/" -rss_limit_mb=2048 -print_final_stats=0 "$dir" \
    2>"$seed_dir/$parser.log" || status=$?
  echo "$status" >"$seed_dir/$parser.status"
}
slots=$(nproc)
for parser in "${parsers[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $slots ]]; do sleep 0.2; done
  run_one "$parser" &
done
wait
failed=0
for parser in "${parsers[@]}"; do
  if [[ $(cat "$seed_dir/$parser.status" 2>/dev/null) != 0 ]]; then
    tail -n 40 "$seed_dir/$parser.log"
    echo "fuzz_$parser failed" >&2
    failed=1
  fi
done
[[ $failed -eq 0 ]] || exit 1
echo "fuzzers: no crash, leak, timeout or sanitizer report"
