# One INTERFACE target carries the project's warning flags; every target of ours links it.
add_library(topoplan_warnings INTERFACE)
target_compile_options(topoplan_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion>)
