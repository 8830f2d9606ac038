# One INTERFACE target carries the project's warning flags; every target of ours links it.
add_library(topoplan_warnings INTERFACE)
target_compile_options(topoplan_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion>)

# -DTOPOPLAN_SANITIZE=ON: every target of ours (library, CLI, tests) built with AddressSanitizer
# and UndefinedBehaviorSanitizer; a finding aborts the process, so the test that ran it fails.
option(TOPOPLAN_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
if(TOPOPLAN_SANITIZE)
  set(sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_compile_options(topoplan_warnings INTERFACE ${sanitize_flags})
  target_link_options(topoplan_warnings INTERFACE ${sanitize_flags})
endif()
# -DTOPOPLAN_FUZZ=ON (clang only; cmake/fuzz.sh, and cmake/sanitize.sh with TOPOPLAN_SANITIZE):
# the library instrumented for libFuzzer, with AddressSanitizer + UndefinedBehaviorSanitizer, and
# the fuzz targets of tests/fuzz built.
option(TOPOPLAN_FUZZ "Build the libFuzzer targets (clang)" OFF)
if(TOPOPLAN_FUZZ)
  set(fuzz_flags -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_compile_options(topoplan_warnings INTERFACE ${fuzz_flags})
  target_link_options(topoplan_warnings INTERFACE -fsanitize=address,undefined)
endif()
