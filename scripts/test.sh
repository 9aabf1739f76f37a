#!/usr/bin/env bash
# The test command the README names: every unit, integration and golden test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --release
