# The `fuzzers` target: configures and builds the fuzz targets (tests/fuzz, their own CMake
# project: clang-19, sanitizers) into <build>/fuzz as part of the default build. Included from
# kfleet's top-level CMakeLists.txt before its subdirectories, so that the target comes first in
# build.ninja: Ninja (1.11) starts ready jobs in the order the file lists them, and the fuzz build
# (about 440 s of CPU) then starts at once and shares the cores with the g++ compiles, instead of
# holding both of CI's cores at the start of ctest or trailing at the end of the build.
# Sets _fz_bin and _fz_build (the build_fuzzers.cmake command), which register_tests.cmake uses.
set(KFLEET_FUZZ_CXX clang++-19 CACHE STRING "the clang that builds the fuzz targets")
option(KFLEET_BUILD_FUZZERS "Build the fuzz targets with the rest (needs clang-19)" ON)
get_filename_component(_fz_src ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
set(_fz_bin ${CMAKE_BINARY_DIR}/fuzz)
set(_fz_launcher "")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_fz_launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
set(_fz_build ${CMAKE_COMMAND} -DSRC=${_fz_src} -DBIN=${_fz_bin} -DCXX=${KFLEET_FUZZ_CXX}
    -DGENERATOR=${CMAKE_GENERATOR} "-DLAUNCHER=${_fz_launcher}" -DWERROR=${KFLEET_WERROR})
# Where clang-19 is missing the default build leaves the fuzzers out; fuzz_build still fails.
find_program(_fz_cxx_found ${KFLEET_FUZZ_CXX})
if(KFLEET_BUILD_FUZZERS AND _fz_cxx_found)
  # As many jobs as cores, like the build around it: never slower than building them in ctest.
  cmake_host_system_information(RESULT _fz_jobs QUERY NUMBER_OF_LOGICAL_CORES)
  add_custom_target(fuzzers ALL
    COMMAND ${_fz_build} -DJOBS=${_fz_jobs} -P ${_fz_src}/cmake/build_fuzzers.cmake
    COMMENT "Building the fuzz targets (clang-19, sanitizers) in ${_fz_bin}"
    VERBATIM)
endif()
