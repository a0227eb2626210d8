# cmake -DSRC=tests/fuzz -DBIN=<build>/fuzz -DCXX=clang++-19 -DGENERATOR=Ninja -P build_fuzzers.cmake
# Configures (once) and builds the fuzz targets; a missing clang or libFuzzer is a failure.
find_program(_cxx ${CXX})
if(NOT _cxx)
  message(FATAL_ERROR "${CXX} not found: the fuzz targets need clang-19 and libclang-rt-19-dev "
                      "(scripts/install-deps.sh installs both)")
endif()
if(NOT EXISTS ${BIN}/CMakeCache.txt)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN} -G ${GENERATOR}
                          -DCMAKE_CXX_COMPILER=${_cxx} ${LAUNCHER}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    file(REMOVE ${BIN}/CMakeCache.txt)
    message(FATAL_ERROR "configuring the fuzz targets failed")
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} -j 2 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the fuzz targets failed")
endif()
