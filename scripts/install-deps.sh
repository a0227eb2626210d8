#!/usr/bin/env bash
# Installs everything kfleet needs to build, test and demo on Debian 12, idempotently,
# through apt and npm only. Safe to run again: installed packages are skipped.
#   scripts/install-deps.sh          build + test dependencies (CI uses this)
#   scripts/install-deps.sh --no-browser   skip chromium + playwright-core
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=1
for a in "$@"; do
  case "$a" in
    --no-browser) want_browser=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-deps: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done

pkgs=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  lld                           # the linker the build uses when present (faster than GNU ld)
  libboost1.81-all-dev          # Beast + C++20 coroutines (1.74 lacks awaitable operators)
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libcurl4-openssl-dev libsqlite3-dev sqlite3
  libpq-dev postgresql          # the PostgreSQL store; its tests run a scratch server (initdb + postgres)
  libssl-dev openssl            # kfleetd HTTPS (TLS tests make their CA with the openssl CLI); RS256 JWTs for Compute Engine
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-19 lld-19 llvm-19       # HIP for gfx1151 without ROCm; resource remarks + readelf notes
  clang-tools-19 libamdhip64-dev # clang-offload-bundler and HIP headers/lib for the gfx1151 compile tests
  bubblewrap util-linux         # the agent's job sandbox (bwrap, setpriv); its tests run it for real
  libclang-rt-19-dev            # libFuzzer and the sanitizer runtimes for tests/fuzz (clang-19)
)
# Node.js: any distribution that provides node + npm will do (nodesource's nodejs bundles npm
# and conflicts with Debian's npm package), so only install Debian's when they are missing.
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
if [ "$want_browser" = 1 ]; then pkgs+=(chromium); fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: apt packages already installed"
fi

# Dashboard build tooling (chart library, bundler) and the browser driver for the UI test.
if [ -f dashboards/package.json ]; then
  if [ ! -d dashboards/node_modules ] || [ dashboards/package.json -nt dashboards/node_modules ]; then
    (cd dashboards && npm install --no-audit --no-fund --loglevel=error && touch node_modules)
  fi
fi

# The MCP tests' client side: the official MCP TypeScript SDK and the conformance suite, pinned
# by tests/mcp/package-lock.json, into tests/mcp/node_modules (gitignored).
if [ -f tests/mcp/package.json ]; then
  if [ ! -d tests/mcp/node_modules ] || [ tests/mcp/package.json -nt tests/mcp/node_modules ] ||
     [ tests/mcp/package-lock.json -nt tests/mcp/node_modules ]; then
    (cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error && touch node_modules)
  fi
fi

# Tools that apt cannot provide must already be on the machine; say so loudly, never skip.
for t in nvcc terraform; do
  if ! command -v "$t" >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ] ; then
    echo "install-deps: warning: '$t' not found; tests that need it will FAIL (not skip)" >&2
  fi
done
echo "install-deps: done"
