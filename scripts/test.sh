#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what it needs (apt, npm), builds,
# and runs every test through ctest. Tests that need a tool (nvcc, clang-19, terraform,
# chromium) fail when it is missing; nothing is skipped silently.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# -j2: the suite is sized for 2 cores; each test has its own timeout in CMake (default 600 s).
ctest --test-dir build --output-on-failure -j2 --timeout 900
