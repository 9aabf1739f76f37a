#!/usr/bin/env python3
"""Writes the NumPy files of tests/data/npy (inputs and expected outputs of cli/tests/cli_npy.rs).

Run with any Python that has numpy and ml_dtypes (e.g. JAX's environment):
    python scripts/gen_npy_data.py
The files are committed; the tests do not need Python.
"""
import pathlib

import ml_dtypes
import numpy as np

out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "npy"
out.mkdir(parents=True, exist_ok=True)
bf16 = ml_dtypes.bfloat16

# types.hlo: one parameter per element type, each doubled.
types = {
    "f32": np.array([[1.5, -2.25, 3.0], [0.125, 1e30, -0.0]], np.float32),
    "f64": np.array([1.0 / 3.0, -2.5, 1e300], np.float64),
    "f16": np.array([1.5, -0.25], np.float16),
    "bf16": np.array([[1.0, -2.5], [0.0078125, 300.0]], bf16),
    "s8": np.array([-128, -1, 63, 100], np.int8),
    "s16": np.array([-30000, 12345], np.int16),
    "s32": np.array([-2**31, 2**30 + 7], np.int32),
    "s64": np.array([-2**62, 2**40 + 3], np.int64),
    "u8": np.array([0, 200, 127], np.uint8),
    "u16": np.array([65535, 1], np.uint16),
    "u32": np.array([2**32 - 1, 5], np.uint32),
    "u64": np.array([2**63 + 1, 9], np.uint64),
    "pred": np.array([True, False, True]),
}
with np.errstate(over="ignore"):
    doubled = [v | v if v.dtype == np.bool_ else v + v for v in types.values()]
# By parameter name, and positionally (arr_0, ...), as np.savez(f, *args) names them.
np.savez(out / "types_args.npz", **types)
np.savez(out / "types_args_positional.npz", *types.values())
np.savez(out / "types_expected.npz", *doubled)
for i, (name, v) in enumerate(types.items()):
    np.save(out / f"types_{i:02d}_{name}.npy", v)

# mlp.hlo: x[32,64] w1[64,128] b1[128] w2[128,16], float32; w1 saved in Fortran order.
rng = np.random.default_rng(7)
x = rng.uniform(-1, 1, (32, 64)).astype(np.float32)
w1 = rng.uniform(-0.2, 0.2, (64, 128)).astype(np.float32)
b1 = rng.uniform(-0.1, 0.1, (128,)).astype(np.float32)
w2 = rng.uniform(-0.2, 0.2, (128, 16)).astype(np.float32)
y = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2
np.save(out / "mlp_x.npy", x)
np.save(out / "mlp_w1_fortran.npy", np.asfortranarray(w1))
np.save(out / "mlp_b1.npy", b1)
np.save(out / "mlp_w2.npy", w2)
np.savez_compressed(out / "mlp_args_compressed.npz", x=x, w1=w1, b1=b1, w2=w2)
np.savez(out / "mlp_expected.npz", out=y.astype(np.float32))
# A wrong shape (w2 transposed) and a wrong type (x as float64), for the error tests.
np.save(out / "mlp_w2_transposed.npy", np.ascontiguousarray(w2.T))
np.save(out / "mlp_x_f64.npy", x.astype(np.float64))
# A float32 array for the bf16 parameter of types.hlo: rounded to nearest even on the way in
# (1.00390625 is halfway between bf16 1 and 1.0078125: to 1; 1.01171875 halfway between
# 1.0078125 and 1.015625: to 1.015625).
np.save(out / "bf16_as_f32.npy", np.array([[1.00390625, 1.01171875], [-2.5, 300.0]], np.float32))
# tests/conformance/pmap_psum_in_while (4 replicas, parameter `shard_map.2`): one argument for
# every replica, named by the parameter's name without HLO's `.2`.
np.savez(out / "pmap_args.npz", shard_map=np.array([[4.0, 3.0, 4.0]], np.float32))
