# Inside kfleet's build: the fuzz targets are their own CMake project (clang-19, sanitizers),
# built into <build>/fuzz by the `fuzzers` target (build_target.cmake, defined from the top-level
# CMakeLists.txt), checked again by the fuzz_build test (a no-op of a second when the build made
# them), then run by one test each.
set(KFLEET_FUZZ_SECONDS 10 CACHE STRING "seconds each fuzz target fuzzes in the ctest suite")
add_test(NAME fuzz_build
  COMMAND ${_fz_build} -DJOBS=2 -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/build_fuzzers.cmake)
# Builds with two jobs when the build did not: reserve both of CI's cores for it; it starts first
# (COST).
set_tests_properties(fuzz_build PROPERTIES FIXTURES_SETUP kfleet_fuzzers TIMEOUT 1800
                     PROCESSORS 2 COST 1000 LABELS "fuzz")

# One test per target, found from the corpora: tests/fuzz/corpus/<name>/ -> fuzz_<name>.
file(GLOB _fz_corpora LIST_DIRECTORIES true ${CMAKE_CURRENT_SOURCE_DIR}/corpus/*)
foreach(dir ${_fz_corpora})
  if(NOT IS_DIRECTORY ${dir})
    continue()
  endif()
  get_filename_component(name ${dir} NAME)
  set(dict "")
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/dict/${name}.dict)
    set(dict ${CMAKE_CURRENT_SOURCE_DIR}/dict/${name}.dict)
  endif()
  set(slow "")
  if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/slow/${name})
    set(slow ${CMAKE_CURRENT_SOURCE_DIR}/slow/${name})
  endif()
  add_test(NAME fuzz_${name}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_target.sh ${_fz_bin}/fuzz_${name} ${dir}
            "${dict}" ${_fz_bin}/run/${name} ${KFLEET_FUZZ_SECONDS} ${slow})
  set_tests_properties(fuzz_${name} PROPERTIES FIXTURES_REQUIRED kfleet_fuzzers TIMEOUT 300
                       LABELS "fuzz")
endforeach()
