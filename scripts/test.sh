#!/usr/bin/env bash
# The test command the README names: installs what the tests need, then runs every unit,
# integration, golden and co-simulation test of the workspace (release mode keeps it fast).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --release
