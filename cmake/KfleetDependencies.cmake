# Finds kfleet's third-party libraries, tolerating the version spread between Debian 12 and
# Ubuntu 24.04 (yaml-cpp 0.7 exports `yaml-cpp`, 0.8 exports `yaml-cpp::yaml-cpp`).
find_package(Threads REQUIRED)
find_package(Boost 1.81 REQUIRED)            # header-only parts: Asio, Beast
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CURL REQUIRED)
find_package(yaml-cpp REQUIRED)
if(TARGET yaml-cpp::yaml-cpp)
  set(KFLEET_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(KFLEET_YAML_TARGET yaml-cpp)
endif()
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()

if(KFLEET_BUILD_ORCHESTRATOR)
  find_package(SQLite3 3.35 QUIET)  # INSERT ... RETURNING
  if(NOT SQLite3_FOUND)
    message(FATAL_ERROR "kfleetd needs SQLite 3.35 or later headers (apt install "
                        "libsqlite3-dev), or configure with -DKFLEET_BUILD_ORCHESTRATOR=OFF for "
                        "agent-only builds")
  endif()
endif()

if(KFLEET_BUILD_ORCHESTRATOR AND KFLEET_WITH_POSTGRESQL)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(LIBPQ QUIET IMPORTED_TARGET libpq)
  endif()
  if(NOT LIBPQ_FOUND)
    message(FATAL_ERROR "the PostgreSQL store needs libpq (apt install libpq-dev, or run "
                        "scripts/install-deps.sh), or configure with -DKFLEET_WITH_POSTGRESQL=OFF")
  endif()
  # The server binaries (initdb, postgres) for the tests and kfleet_bench's scratch server:
  # Debian's postgresql package puts them in /usr/lib/postgresql/<major>/bin.
  file(GLOB _kfleet_pg_bindirs LIST_DIRECTORIES true /usr/lib/postgresql/*/bin)
  list(SORT _kfleet_pg_bindirs COMPARE NATURAL ORDER DESCENDING)
  find_path(KFLEET_PG_BINDIR initdb HINTS ${_kfleet_pg_bindirs} /usr/local/pgsql/bin
            DOC "the directory holding PostgreSQL's initdb and postgres")
  if(NOT KFLEET_PG_BINDIR)
    message(WARNING "PostgreSQL's initdb was not found (apt install postgresql): the "
                    "PostgreSQL store tests will FAIL until it is installed")
    set(KFLEET_PG_BINDIR "")
  endif()
endif()

if(KFLEET_BUILD_ORCHESTRATOR)
  # kfleetd's HTTPS; optional so that hosts without libssl-dev still build (plain HTTP only).
  find_package(OpenSSL 1.1.1 QUIET)
  if(NOT OpenSSL_FOUND)
    message(WARNING "OpenSSL not found (apt install libssl-dev): kfleetd will serve plain HTTP only")
  endif()
endif()

if(KFLEET_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(KFLEET_BUILD_BENCH)
  find_package(benchmark QUIET)
endif()
