# The fuzz targets, built with clang (libFuzzer + ASan + UBSan). Product sources are compiled
# here again, instrumented, from the same files kfleetd and kfleet-agent are built from.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "the fuzz targets need clang with libFuzzer (CXX=clang++-19; apt install "
                      "clang-19 libclang-rt-19-dev, or run scripts/install-deps.sh)")
endif()
get_filename_component(KFLEET_ROOT ${CMAKE_CURRENT_SOURCE_DIR}/../.. ABSOLUTE)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Fuzz CACHE STRING "" FORCE)
endif()

# Every crash must stop the run: UBSan findings abort instead of printing and going on.
set(KFLEET_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
# -g1: line tables for the reports, at a fraction of full debug info's compile time.
add_compile_options(-O1 -g1 ${KFLEET_SANITIZE} -fsanitize=fuzzer-no-link)
# The warning set of kfleet's own build, here from clang-19: it builds without one, and a new
# one fails the build (KFLEET_WERROR, passed on from kfleet's build; third-party headers come
# in through imported targets, as -isystem).
option(KFLEET_WERROR "Fail the fuzz build on a warning in kfleet's own code" ON)
add_compile_options(-Wall -Wextra -Wno-missing-field-initializers $<$<BOOL:${KFLEET_WERROR}>:-Werror>)
add_link_options(${KFLEET_SANITIZE})
# Unity batches: the product sources compiled here again were half of the test build's CPU
# (1,054 s of CPU in 153 compiler runs, one per file, on a 2-core machine). Batches of 16, twice
# kfleet's own build's: this build is all of one compiler's flags and headers, and alone here
# (ccache off) it took 251 s / 499 s of CPU in batches of 8, 220 s / 434 s in batches of 16.
set(CMAKE_UNITY_BUILD ON)
set(CMAKE_UNITY_BUILD_BATCH_SIZE 16)

find_package(Threads REQUIRED)
find_package(Boost 1.81 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)

# The third-party libraries are linked statically where a static archive exists, so that the
# fuzzers run on a host that lacks them (the long run's machine): `ldd` then shows only libc,
# libm, libstdc++ and libgcc_s.
function(kfleet_fuzz_find_lib var)
  find_library(${var} NAMES ${ARGN} REQUIRED)
endfunction()
kfleet_fuzz_find_lib(KFLEET_FUZZ_YAML libyaml-cpp.a yaml-cpp)
kfleet_fuzz_find_lib(KFLEET_FUZZ_SQLITE libsqlite3.a sqlite3)
kfleet_fuzz_find_lib(KFLEET_FUZZ_CRYPTO libcrypto.a crypto)
get_target_property(KFLEET_FUZZ_YAML_INC yaml-cpp INTERFACE_INCLUDE_DIRECTORIES)
if(NOT KFLEET_FUZZ_YAML_INC)
  get_target_property(KFLEET_FUZZ_YAML_INC yaml-cpp::yaml-cpp INTERFACE_INCLUDE_DIRECTORIES)
endif()

# --- product sources, instrumented -----------------------------------------------------------
file(GLOB FZ_COMMON_SOURCES CONFIGURE_DEPENDS ${KFLEET_ROOT}/common/src/*.cpp)
add_library(fz_common STATIC ${FZ_COMMON_SOURCES})
target_include_directories(fz_common PUBLIC ${KFLEET_ROOT}/common/include)
if(KFLEET_FUZZ_YAML_INC)
  target_include_directories(fz_common PUBLIC ${KFLEET_FUZZ_YAML_INC})
endif()
target_link_libraries(fz_common PUBLIC nlohmann_json::nlohmann_json ${KFLEET_FUZZ_YAML}
                      Threads::Threads)
target_compile_definitions(fz_common PRIVATE KFLEET_VERSION="${PROJECT_VERSION}")

# kfleetd: store (SQLite only), scheduler, provisioners, control plane, HTTP API. TLS is left
# out: the fuzzer speaks plain HTTP to the same parser, router and handlers.
set(S ${KFLEET_ROOT}/orchestrator)
# Each library's sources by folder, so that a new file needs no line here (authorizer.cpp, split
# from server.cpp, first broke this build when the API's sources were listed one by one): the
# store's but PostgreSQL's (pg_disabled.cpp stands in, as in a build without libpq), the
# scheduler, the provisioners, the control plane, and the HTTP API's but kfleetd's own main and
# provisioner wiring.
file(GLOB fz_store_sources CONFIGURE_DEPENDS ${S}/store/src/*.cpp)
list(FILTER fz_store_sources EXCLUDE REGEX "/pg_[^/]*\\.cpp$")
list(APPEND fz_store_sources ${S}/store/src/pg_disabled.cpp)
file(GLOB fz_scheduler_sources CONFIGURE_DEPENDS ${S}/scheduler/src/*.cpp)
file(GLOB fz_provision_sources CONFIGURE_DEPENDS ${S}/provision/src/*.cpp)
file(GLOB fz_core_sources CONFIGURE_DEPENDS ${S}/core/src/*.cpp)
file(GLOB fz_api_sources CONFIGURE_DEPENDS ${S}/api/src/*.cpp)
list(FILTER fz_api_sources EXCLUDE REGEX "/kfleetd_[^/]*\\.cpp$")
add_library(fz_kfleetd STATIC ${fz_store_sources} ${fz_scheduler_sources} ${fz_provision_sources}
                              ${fz_core_sources} ${fz_api_sources})
target_include_directories(fz_kfleetd PUBLIC
  ${S}/store/include ${S}/scheduler/include ${S}/provision/include ${S}/core/include
  ${S}/api/include ${S}/api/src)
target_link_libraries(fz_kfleetd PUBLIC fz_common Boost::headers ${KFLEET_FUZZ_SQLITE}
                      ${CMAKE_DL_LIBS} m)

# The event-upload scanner alone (its target needs nothing else of kfleetd).
add_library(fz_event_batch STATIC ${S}/api/src/event_batch.cpp)
target_include_directories(fz_event_batch PUBLIC ${S}/api/include)
target_link_libraries(fz_event_batch PUBLIC fz_common)

# Compute Engine: the provisioner and its token sources; curl_call.cpp is replaced by the
# target's own gce::call, which answers from the fuzz input.
add_library(fz_gce STATIC
  ${S}/provision_gce/src/gce_error.cpp ${S}/provision_gce/src/gce_auth.cpp
  ${S}/provision_gce/src/gce_config.cpp ${S}/provision_gce/src/gce_provisioner.cpp)
target_include_directories(fz_gce PUBLIC ${S}/provision_gce/include ${S}/provision_gce/src
                           ${S}/provision/include)
target_link_libraries(fz_gce PUBLIC fz_common Boost::headers ${KFLEET_FUZZ_CRYPTO} ${CMAKE_DL_LIBS})

add_library(fz_terraform STATIC
  ${S}/provision_terraform/src/aws_error.cpp ${S}/provision_terraform/src/terraform_output.cpp)
target_include_directories(fz_terraform PUBLIC ${S}/provision_terraform/include ${S}/provision/include)
target_link_libraries(fz_terraform PUBLIC fz_common)

# The agent's GPU backends (harness protocol, custom steps' metric lines).
file(GLOB FZ_BACKEND_SOURCES CONFIGURE_DEPENDS ${KFLEET_ROOT}/agent/backends/common/*.cpp
     ${KFLEET_ROOT}/agent/backends/discovery/*.cpp ${KFLEET_ROOT}/agent/backends/cuda/*.cpp
     ${KFLEET_ROOT}/agent/backends/hip/*.cpp ${KFLEET_ROOT}/agent/backends/compile/*.cpp)
add_library(fz_backends STATIC ${FZ_BACKEND_SOURCES})
target_include_directories(fz_backends PUBLIC ${KFLEET_ROOT}/agent/backends ${KFLEET_ROOT}/agent/include)
target_link_libraries(fz_backends PUBLIC fz_common fz_problems ${CMAKE_DL_LIBS})
target_compile_definitions(fz_backends PRIVATE
  KFLEET_DEFAULT_HARNESS_DIR="${KFLEET_ROOT}/kernels/harness")

# The harness's plain-C++ parts that read what a job's process or build wrote: the replay launch
# list, the device code in the job's objects and, on HIP, the code objects' kernel argument
# layouts (kfleet-measure and the HIP recorder link the same files).
add_library(fz_harness STATIC ${KFLEET_ROOT}/kernels/harness/cpu/launch_list.cpp
            ${KFLEET_ROOT}/kernels/harness/cpu/device_code.cpp
            ${KFLEET_ROOT}/kernels/harness/cpu/amdgpu_code_object.cpp)
target_include_directories(fz_harness PUBLIC ${KFLEET_ROOT}/kernels/harness/cpu)

# The problem library's spec writer, which the agent links to hand a problem to the harness
# (kernels/problems/cpu/case_spec.cpp, and the harness's plain-C++ files beside fz_harness's).
file(GLOB FZ_PROBLEM_SOURCES CONFIGURE_DEPENDS ${KFLEET_ROOT}/kernels/harness/cpu/*.cpp)
list(FILTER FZ_PROBLEM_SOURCES EXCLUDE REGEX "/(launch_list|device_code|amdgpu_code_object)\\.cpp$")
add_library(fz_problems STATIC ${FZ_PROBLEM_SOURCES} ${KFLEET_ROOT}/kernels/problems/cpu/case_spec.cpp)
target_include_directories(fz_problems PUBLIC ${KFLEET_ROOT}/kernels/problems/cpu
                           ${KFLEET_ROOT}/kernels/harness/cpu ${KFLEET_ROOT}/kernels/harness/include)
target_link_libraries(fz_problems PUBLIC fz_common fz_harness)

# --- the targets -----------------------------------------------------------------------------
# kfleet_fuzz_target(NAME LIBS...): targets/NAME.cpp -> fuzz_NAME.
set(KFLEET_FUZZ_TARGETS "")
function(kfleet_fuzz_target name)
  add_executable(fuzz_${name} ${CMAKE_CURRENT_SOURCE_DIR}/targets/${name}.cpp)
  target_link_libraries(fuzz_${name} PRIVATE ${ARGN})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  target_include_directories(fuzz_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/targets)
  set(KFLEET_FUZZ_TARGETS ${KFLEET_FUZZ_TARGETS} fuzz_${name} PARENT_SCOPE)
endfunction()

kfleet_fuzz_target(job_yaml fz_common)
kfleet_fuzz_target(job_json fz_common)
kfleet_fuzz_target(bundle fz_common)
kfleet_fuzz_target(event_upload fz_event_batch)
kfleet_fuzz_target(http_request fz_kfleetd)
kfleet_fuzz_target(agent_output fz_backends)
kfleet_fuzz_target(gce_answers fz_gce)
kfleet_fuzz_target(terraform_answers fz_terraform)
kfleet_fuzz_target(launch_list fz_harness)
kfleet_fuzz_target(device_code fz_harness)
kfleet_fuzz_target(amdgpu_code_object fz_harness)
