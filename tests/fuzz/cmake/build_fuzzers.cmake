# cmake -DSRC=tests/fuzz -DBIN=<build>/fuzz -DCXX=clang++-19 -DGENERATOR=Ninja [-DJOBS=2]
#       [-DWERROR=ON|OFF] -P build_fuzzers.cmake
# Configures (once) and builds the fuzz targets; a missing clang or libFuzzer is a failure.
# Up to date, it is a no-op of about a second.
if(NOT JOBS)
  set(JOBS 2)
endif()
if(NOT DEFINED WERROR)
  set(WERROR ON)
endif()
find_program(_cxx ${CXX})
if(NOT _cxx)
  message(FATAL_ERROR "${CXX} not found: the fuzz targets need clang-19 and libclang-rt-19-dev "
                      "(scripts/install-deps.sh installs both)")
endif()
if(NOT EXISTS ${BIN}/CMakeCache.txt)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN} -G ${GENERATOR}
                          -DCMAKE_CXX_COMPILER=${_cxx} ${LAUNCHER} -DKFLEET_WERROR=${WERROR}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    file(REMOVE ${BIN}/CMakeCache.txt)
    message(FATAL_ERROR "configuring the fuzz targets failed")
  endif()
endif()
# The warnings switch may have changed since the first configure.
file(STRINGS ${BIN}/CMakeCache.txt _werror REGEX "^KFLEET_WERROR:BOOL=")
if(NOT _werror STREQUAL "KFLEET_WERROR:BOOL=${WERROR}")
  execute_process(COMMAND ${CMAKE_COMMAND} -DKFLEET_WERROR=${WERROR} ${BIN} RESULT_VARIABLE rc
                  OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the fuzz targets failed")
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} -j ${JOBS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the fuzz targets failed")
endif()
