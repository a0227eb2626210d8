# Run by the dashboards target: stops the build with a fix when npm install has not run.
if(NOT EXISTS "${DIR}/node_modules/esbuild" OR NOT EXISTS "${DIR}/node_modules/chart.js")
  message(FATAL_ERROR "dashboards/node_modules is missing or incomplete: run "
                      "'npm ci' in ${DIR} (scripts/install-deps.sh does it).")
endif()
