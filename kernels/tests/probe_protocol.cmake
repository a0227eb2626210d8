# Runs `BIN probe` and checks the protocol: exit 0 with a device line, or exit 3 with a setup
# error line naming the failed call; anything else (a crash, garbage on stdout) fails.
execute_process(COMMAND ${BIN} probe RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
if(rc EQUAL 0)
  if(NOT out MATCHES "^\\{\"type\":\"device\",\"runtime\":\"(cuda|hip)\"")
    message(FATAL_ERROR "probe exited 0 without a device line:\n${out}")
  endif()
elseif(rc EQUAL 3)
  if(NOT out MATCHES "^\\{\"type\":\"error\",\"phase\":\"setup\",\"call\":\"[^\"]+\",\"where\":\"[^\"]+:[0-9]+\"")
    message(FATAL_ERROR "probe exited 3 without a setup error line:\n${out}")
  endif()
else()
  message(FATAL_ERROR "probe exited '${rc}' (expected 0 or 3):\n${out}\n${err}")
endif()
# The usage path: an unknown stage is exit 2 with a usage error line.
execute_process(COMMAND ${BIN} no-such-stage RESULT_VARIABLE rc OUTPUT_VARIABLE out TIMEOUT 60)
if(NOT rc EQUAL 2 OR NOT out MATCHES "\"phase\":\"usage\"")
  message(FATAL_ERROR "unknown stage gave exit '${rc}':\n${out}")
endif()
