#!/usr/bin/env bash
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ and
# runs the test suite there (any sanitizer report fails the test that triggered it), all but the
# tests labelled slow (the README's cross-validation table: a minute of fitting at -O2, many at
# -O0; the unit tests exercise the same code on a smaller fit).
set -euo pipefail
cd "$(dirname "$0")/.."
# -O0 without debug information: the quickest build on 2 cores; the reports still name the
# function and file.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DTOPOPLAN_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$(nproc)" >&2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE slow
