# Shared compile settings and a helper for gtest binaries (named *_gtest, registered with ctest).
# kfleet's own code builds without a warning (g++ 12/13, clang-19, nvcc 13): -Werror keeps it so,
# and makes a new warning fail the build and so CI. Third-party headers come in through imported
# targets, whose include directories CMake passes as -isystem: their warnings are not ours.
# -DKFLEET_WERROR=OFF turns warnings back into warnings (e.g. to try a compiler kfleet does not
# support yet); the kernel compile tests and the fuzz build follow the same switch.
option(KFLEET_WERROR "Fail the build on a warning in kfleet's own code" ON)
add_library(kfleet_warnings INTERFACE)
target_compile_options(kfleet_warnings INTERFACE -Wall -Wextra -Wno-missing-field-initializers
                       $<$<BOOL:${KFLEET_WERROR}>:-Werror>)
# In a unity batch GCC reads each .cpp as if it were a header, and warns where a type of the
# file's anonymous namespace is part of a type declared elsewhere (-Wsubobject-linkage): a
# header's mistake, never a source file's. Built file by file, the warning stays on.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND KFLEET_UNITY_BUILD)
  target_compile_options(kfleet_warnings INTERFACE -Wno-subobject-linkage)
endif()

# What the tests share (tests/support/include): kfleet/testing/temp_dir.hpp and the like.
add_library(kfleet_test_support INTERFACE)
target_include_directories(kfleet_test_support INTERFACE ${CMAKE_CURRENT_LIST_DIR}/../tests/support/include)
# The tests' own code (their sources, fakes and fixtures; not the libraries they test, which keep
# the build type's -O2) is compiled at -O0: gtest's and the fakes' templates cost -O2 a third more
# compile time for code that only drives the code under test (a unity batch of core_gtest: 39 s
# of CPU at -O2, 28 s at -O1, 24 s at -O0). -O0 rather than -O1 took the tests' build (after the
# demo's, ccache off, 2 cores; the fuzz build at -O0 in both, measured so) from 243 s / 466 s of
# CPU to 220 s / 417 s; every test binary ran as long as at -O1 but problems_gtest, whose CPU
# references loop in the test's own code (12 s of CPU at -O1, 22 s at -O0): a test target's
# KFLEET_TEST_CODE_OPT property overrides the level.
# Empty: the build type's level for the tests too.
set(KFLEET_TEST_CODE_OPT -O0 CACHE STRING "optimisation of the tests' own code in optimised builds")
if(KFLEET_TEST_CODE_OPT)
  set(_kfleet_test_opt $<TARGET_PROPERTY:KFLEET_TEST_CODE_OPT>)
  set(_kfleet_test_opt $<IF:$<BOOL:${_kfleet_test_opt}>,${_kfleet_test_opt},${KFLEET_TEST_CODE_OPT}>)
  target_compile_options(kfleet_test_support INTERFACE
                         $<$<CONFIG:RelWithDebInfo,Release>:${_kfleet_test_opt}>)
endif()

# kfleet_add_gtest(NAME SOURCES... LIBS ... [PROPERTIES prop value ...])
# PROPERTIES are set on every test the binary holds (e.g. COST, so ctest starts the slow ones
# first and the short ones fill the other core around them).
function(kfleet_add_gtest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;PROPERTIES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main kfleet_warnings
                        kfleet_test_support)
  # Tests that read files of the tree (schemas, openapi.yaml) find it through this.
  target_compile_definitions(${name} PRIVATE KFLEET_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  if(ARG_PROPERTIES)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${ARG_PROPERTIES})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# kfleet_unsanitized(TARGET): a program that runs inside the job's sandbox (the syscall filter's
# exec helper, the tests' probe) is never built with KFLEET_SANITIZE: there, under the filter and
# with the job's environment, LeakSanitizer cannot stop the world (no ptrace) and would fail
# every sandboxed run of an address-sanitized build. Such a program links nothing sanitized.
function(kfleet_unsanitized target)
  if(KFLEET_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
    target_link_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()
