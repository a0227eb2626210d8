# Compiles kernels/tests/hip_kernargs_probe.hip with clang for gfx1151 (the flags of the HIP
# compile tests) and holds kfleet-hip-kernargs's reading of the object's offload bundle to the
# layout the HIP ABI gives those kernels. A missing compiler fails; so does a warning (WARN: the
# warning flags, separated by |).
string(REPLACE "|" ";" warn "${WARN}")
execute_process(COMMAND ${CLANG} -std=c++17 -O3 -x hip --offload-arch=gfx1151 -nogpulib
                        --hip-path=${HIP_PATH} -DKFLEET_HIP_NO_DEVICE_LIBS ${warn} -I${INC} -c ${SRC}
                        -o ${OUT}/hip_kernargs_probe.o
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang failed (${rc}): ${err}")
endif()
execute_process(COMMAND ${TOOL} ${OUT}/hip_kernargs_probe.o gfx1151
                RESULT_VARIABLE rc OUTPUT_VARIABLE got ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kfleet-hip-kernargs failed (${rc}): ${err}")
endif()
# Args is 32 bytes (two pointers, an int padded to 8, a double); then the int. mixed: a
# pointer, a char, a short at its 2-byte alignment, a long long at 8.
set(want "_Z5scale4Argsi 0+32 32+4\n_ZN12_GLOBAL__N_15mixedEPfcsx 0+8 8+1 10+2 16+8\n")
if(NOT got STREQUAL want)
  message(FATAL_ERROR "kernel argument layout:\n${got}\nexpected:\n${want}")
endif()
message(STATUS "kernel argument layout as expected:\n${got}")
