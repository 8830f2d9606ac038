#!/usr/bin/env bash
# Sourced by cmake/sanitize.sh and cmake/fuzz.sh: installs clang and its libFuzzer runtime
# (libclang-rt-14-dev) from Debian when either is missing.
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi
