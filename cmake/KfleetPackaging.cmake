# kfleet's install layout and its Debian packages (cpack -G DEB, from a build folder):
#   kfleet-agent    /usr/bin/kfleet-agent, /usr/lib/kfleet/kfleet-seccomp-exec, the systemd units
#                   kfleet-agent.service and kfleet-agent@.service, /etc/kfleet/agent.env
#   kfleet-kernels  /usr/share/kfleet/kernels: the harness sources (the agent builds its measuring
#                   process from them), the Python recorder and the problem library (architecture
#                   all; the agent needs all of it, kfleetd and the CLI the problem library)
#   kfleetd         /usr/bin/kfleetd, /usr/share/kfleet/dashboards, kfleetd.service, its user and
#                   /var/lib/kfleetd, /etc/kfleet/kfleetd.env
#   kfleet          /usr/bin/kfleet (the CLI)
# The programs find their files relative to their own path (kfleet/common/install_layout.hpp):
# <prefix>/share/kfleet and <prefix>/lib/kfleet, never a path of the build machine. This build
# folder gets the same shape: <build>/share/kfleet links to the sources' kernels/ and to the
# dashboards the build makes, and the helpers are built beside the agent.
#
# One build serves Debian 12 and Ubuntu 24.04: the libraries whose package names differ between
# them are named with both (libcurl4 | libcurl4t64, libssl3 | libssl3t64; on amd64 the t64
# rename changed no ABI), and yaml-cpp, whose soname differs (0.7 against 0.8), is linked
# statically.
include(GNUInstallDirs)

# --- the build tree's share/kfleet ------------------------------------------------------------
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share/kfleet)
foreach(link kernels:${CMAKE_SOURCE_DIR}/kernels dashboards:${CMAKE_BINARY_DIR}/dashboards/dist)
  string(REPLACE ":" ";" link "${link}")
  list(GET link 0 name)
  list(GET link 1 target)
  if(NOT IS_SYMLINK ${CMAKE_BINARY_DIR}/share/kfleet/${name})
    file(CREATE_LINK ${target} ${CMAKE_BINARY_DIR}/share/kfleet/${name} SYMBOLIC)
  endif()
endforeach()

# --- yaml-cpp linked statically (its soname differs between Debian 12 and Ubuntu 24.04) -------
option(KFLEET_STATIC_YAML_CPP "Link yaml-cpp statically, so one build runs on Debian 12 and Ubuntu 24.04" ON)
if(KFLEET_STATIC_YAML_CPP AND TARGET ${KFLEET_YAML_TARGET})
  get_target_property(_kfleet_yaml_configs ${KFLEET_YAML_TARGET} IMPORTED_CONFIGURATIONS)
  foreach(cfg ${_kfleet_yaml_configs})
    get_target_property(_kfleet_yaml_so ${KFLEET_YAML_TARGET} IMPORTED_LOCATION_${cfg})
    get_filename_component(_kfleet_yaml_dir "${_kfleet_yaml_so}" DIRECTORY)
    if(EXISTS ${_kfleet_yaml_dir}/libyaml-cpp.a)
      set_target_properties(${KFLEET_YAML_TARGET} PROPERTIES
        IMPORTED_LOCATION_${cfg} ${_kfleet_yaml_dir}/libyaml-cpp.a IMPORTED_SONAME_${cfg} "")
    else()
      message(WARNING "no libyaml-cpp.a beside ${_kfleet_yaml_so}: yaml-cpp is linked as a shared "
                      "library, and the packages then install only where its soname is")
    endif()
  endforeach()
endif()

# --- install rules ----------------------------------------------------------------------------
set(KFLEET_PKG ${CMAKE_SOURCE_DIR}/packaging)
# Absolute: a package's config and units live in the system's folders whatever its prefix.
set(KFLEET_UNIT_DIR /lib/systemd/system CACHE PATH "where the systemd units are installed")

if(TARGET kfleet-agent)
  install(TARGETS kfleet-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
  install(TARGETS kfleet-seccomp-exec RUNTIME DESTINATION ${CMAKE_INSTALL_LIBDIR}/kfleet COMPONENT agent)
  install(FILES ${KFLEET_PKG}/systemd/kfleet-agent.service ${KFLEET_PKG}/systemd/kfleet-agent@.service
          DESTINATION ${KFLEET_UNIT_DIR} COMPONENT agent)
  # The documented config; postinst copies it to /etc/kfleet/agent.env when there is none (not a
  # conffile: the cloud startup scripts write their own, and an upgrade must never stop on it).
  install(FILES ${KFLEET_PKG}/etc/agent.env DESTINATION ${CMAKE_INSTALL_DATADIR}/kfleet COMPONENT agent)
  install(FILES ${KFLEET_PKG}/README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kfleet-agent COMPONENT agent)
endif()

install(DIRECTORY ${CMAKE_SOURCE_DIR}/kernels/harness ${CMAKE_SOURCE_DIR}/kernels/problems
        DESTINATION ${CMAKE_INSTALL_DATADIR}/kfleet/kernels COMPONENT kernels
        PATTERN tests EXCLUDE PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)

if(TARGET kfleetd)
  install(TARGETS kfleetd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT kfleetd)
  install(DIRECTORY ${CMAKE_BINARY_DIR}/dashboards/dist/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kfleet/dashboards
          COMPONENT kfleetd OPTIONAL)
  install(FILES ${KFLEET_PKG}/systemd/kfleetd.service DESTINATION ${KFLEET_UNIT_DIR} COMPONENT kfleetd)
  install(FILES ${KFLEET_PKG}/etc/kfleetd.env DESTINATION ${CMAKE_INSTALL_DATADIR}/kfleet COMPONENT kfleetd)
  install(FILES ${KFLEET_PKG}/README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kfleetd COMPONENT kfleetd)
endif()

if(TARGET kfleet)
  install(TARGETS kfleet RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
endif()

# --- the Debian packages ----------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kfleet)
set(CPACK_PACKAGE_VENDOR "kfleet")
set(CPACK_PACKAGE_CONTACT "kfleet maintainers <kfleet@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed GPU kernel benchmarking orchestrator")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL agent kernels kfleetd cli)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_STRIP_FILES ON)  # the packages carry no debug info
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
# Ask the packaged binaries, not the build host's package database: dpkg-shlibdeps would name
# Debian 12's packages only (libcurl4, not libcurl4t64).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(_kfleet_curl "libcurl4 (>= 7.74) | libcurl4t64")
set(_kfleet_base "libc6 (>= 2.34), libstdc++6 (>= 12), libgcc-s1")

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME kfleet-agent)
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS
    "kfleet-kernels (= ${PROJECT_VERSION}-1), ${_kfleet_base}, ${_kfleet_curl}, bubblewrap, util-linux, ca-certificates")
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS "python3, python3-venv")
set(CPACK_DEBIAN_AGENT_PACKAGE_SUGGESTS "cuda-toolkit | nvidia-cuda-toolkit, clang-19, lld-19, libamdhip64-dev")
set(CPACK_COMPONENT_AGENT_DESCRIPTION
    "kfleet's GPU agent\n kfleet-agent leases kfleet jobs from kfleetd and builds, gates, measures and\n profiles them on this host's GPU (or builds them only, as a compile agent), each\n job's processes in a sandbox (bubblewrap, an unprivileged uid, a cgroup, a\n syscall filter). `kfleet-agent --check` says what this host can do and what\n to install; the units run it before the agent.")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
    "${KFLEET_PKG}/debian/kfleet-agent/postinst;${KFLEET_PKG}/debian/kfleet-agent/prerm;${KFLEET_PKG}/debian/kfleet-agent/postrm")

set(CPACK_DEBIAN_KERNELS_PACKAGE_NAME kfleet-kernels)
set(CPACK_DEBIAN_KERNELS_PACKAGE_ARCHITECTURE all)
set(CPACK_COMPONENT_KERNELS_DESCRIPTION
    "kfleet's harness sources and problem library\n The sources the agent builds its measuring process (kfleet-measure) from, the\n Python recorder of Triton and torch kernels, and the problem library that\n kfleetd, the agents and the CLI resolve jobs' kernel.problem in.")

set(CPACK_DEBIAN_KFLEETD_PACKAGE_NAME kfleetd)
set(CPACK_DEBIAN_KFLEETD_PACKAGE_DEPENDS
    "kfleet-kernels (= ${PROJECT_VERSION}-1), ${_kfleet_base}, ${_kfleet_curl}, libsqlite3-0 (>= 3.35), libpq5, libssl3 | libssl3t64, adduser")
set(CPACK_COMPONENT_KFLEETD_DESCRIPTION
    "kfleet's orchestrator\n kfleetd queues kfleet jobs and leases them to agents, provisions cloud GPUs\n (terraform, Compute Engine), and serves the API and the dashboards. Its store is\n SQLite (/var/lib/kfleetd) or PostgreSQL.")
set(CPACK_DEBIAN_KFLEETD_PACKAGE_CONTROL_EXTRA
    "${KFLEET_PKG}/debian/kfleetd/postinst;${KFLEET_PKG}/debian/kfleetd/prerm;${KFLEET_PKG}/debian/kfleetd/postrm")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME kfleet)
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "${_kfleet_base}, ${_kfleet_curl}")
set(CPACK_DEBIAN_CLI_PACKAGE_RECOMMENDS "kfleet-kernels")
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "kfleet's command line\n kfleet submits jobs and follows them, reads verdicts, runs regression suites\n and serves kfleet to search agents over MCP (kfleet mcp).")

include(CPack)

# CI: the packages of this build, unpacked into an empty prefix and run with the source and build
# trees hidden (tests/packaging/installed-layout-test.sh; root, as CI runs).
if(KFLEET_BUILD_TESTS AND TARGET kfleetd AND TARGET kfleet-agent AND TARGET kfleet)
  add_test(NAME packaging_installed_layout
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/packaging/installed-layout-test.sh
                   ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  set_tests_properties(packaging_installed_layout PROPERTIES TIMEOUT 900 COST 400)
endif()
