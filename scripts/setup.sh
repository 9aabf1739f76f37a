#!/usr/bin/env bash
# Installs what the tests need on a fresh machine (Debian): Verilator, Yosys, Icarus Verilog and
# nextpnr-ice40 for the RTL co-simulation, synthesis and place-and-route tests, and the
# rustfmt/clippy components.
set -euo pipefail
need=""
for p in verilator yosys iverilog nextpnr-ice40; do command -v "$p" >/dev/null || need="$need $p"; done
if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq verilator yosys iverilog nextpnr-ice40 >/dev/null
  else
    echo "setup: missing$need; install them (e.g. sudo apt-get install -y verilator yosys iverilog nextpnr-ice40)" >&2
  fi
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
