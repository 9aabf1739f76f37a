#!/bin/sh
# MXU utilization of the benchmark workloads (docs/compiler.md, "Measured"):
#   cargo build --release -p cli && scripts/bench.sh [SYSTOLE]
# Runs `systole run FILE --arch tpu-v4 --timing-only --report R.json` on tests/bench/*.hlo (GEMMs,
# ResNet convolutions, and modules larger than VMEM that spill or stream: docs/compiler.md) and
# the transformer block, and prints cycles and mxu_utilization from each report.
set -e
cd "$(dirname "$0")/.."
S=${1:-${CARGO_TARGET_DIR:-target}/release/systole}
R=$(mktemp)
for f in tests/bench/*.hlo tests/models/transformer_block_opt/module.hlo; do
  "$S" run "$f" --arch tpu-v4 --timing-only --report "$R" >/dev/null 2>&1 || echo "$f: run failed" >&2
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%-45s %10d %7.3f' % (sys.argv[2], r['cycles'], r['mxu_utilization']))" "$R" "$f"
done
rm -f "$R"
