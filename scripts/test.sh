#!/usr/bin/env bash
# The test command the README names: installs what the tests need, then runs every unit,
# integration, golden and co-simulation test of the workspace (release mode keeps it fast).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Property tests draw from a fixed seed here, so a run is reproducible; plain `cargo test`
# explores new cases every time.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-1}"
cargo test --workspace --release
