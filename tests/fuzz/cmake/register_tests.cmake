# Inside kfleet's build: the fuzz targets are their own CMake project (clang-19, sanitizers),
# configured and built by the fuzz_build test into <build>/fuzz, then run by one test each.
set(KFLEET_FUZZ_SECONDS 10 CACHE STRING "seconds each fuzz target fuzzes in the ctest suite")
set(KFLEET_FUZZ_CXX clang++-19 CACHE STRING "the clang that builds the fuzz targets")
set(_fz_bin ${CMAKE_BINARY_DIR}/fuzz)
set(_fz_launcher "")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_fz_launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
add_test(NAME fuzz_build
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_CURRENT_SOURCE_DIR} -DBIN=${_fz_bin}
          -DCXX=${KFLEET_FUZZ_CXX} -DGENERATOR=${CMAKE_GENERATOR} "-DLAUNCHER=${_fz_launcher}"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/build_fuzzers.cmake)
# Builds with two jobs: reserve both of CI's cores for it; it starts first (COST).
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
