#!/usr/bin/env bash
# Builds the whole project with clang, AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ and runs the test suite there (any sanitizer report fails the test that triggered
# it), all but the tests labelled slow (the README's cross-validation table: a minute of fitting
# at -O2; tests/tools/one_run_fit.py's 300 calibrate runs; the unit tests exercise the same code
# on a smaller fit). The same build carries
# libFuzzer's coverage instrumentation and the fuzz targets, so that `FUZZ_BUILD_DIR=build-asan
# bash cmake/fuzz.sh` (CI) fuzzes without compiling the library a third time. Needs clang and
# libclang-rt-14-dev (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/need-clang.sh
# -O1 with line tables only: about as quick to build as -O0, twice as quick to run the suite, and
# the reports still name the function, file and line. A unity build (CMake joins the sources of
# a target 8 at a time): 210 s instead of 326 s on 2 cores; two .cpp files that define the same
# name in an anonymous namespace break it, so shared helpers live in src/detail/.
CXX=clang++ CC=clang cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" -DTOPOPLAN_SANITIZE=ON -DTOPOPLAN_FUZZ=ON \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build-asan -j "$(nproc)" >&2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE slow
