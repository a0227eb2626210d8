# The starter `kfleet problems show NAME --starter` prints compiles on the ABI it names: run
# the CLI, write the source into the build tree, compile it with nvcc (object only).
# -DKFLEET=... -DLIBRARY=... -DNAME=... -DNVCC=... -DINC=... -DOUT=...
execute_process(COMMAND ${KFLEET} problems --dir ${LIBRARY} show ${NAME} --starter
                OUTPUT_FILE ${OUT}/starter_${NAME}.cu RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kfleet problems show ${NAME} --starter exited ${rc}: ${err}")
endif()
execute_process(COMMAND ${NVCC} -std=c++17 -O3 -arch=sm_89 -I${INC} -c ${OUT}/starter_${NAME}.cu
                        -o ${OUT}/starter_${NAME}.o
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the starter of ${NAME} does not compile:\n${out}${err}")
endif()
