"""Exports models whose activations are larger than a shrunk VMEM, the way a new systole user
would (jax.jit(f).lower(...) for the pre-optimization HLO, .compile().as_text() for the
post-optimization HLO). Only module.hlo is written: their inputs are drawn with `--random` and
the outputs checked against systole's evaluator (tests/tests/chip_spill.rs), since JSON
inputs of this size would be tens of megabytes.

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax==0.10.2 jaxlib==0.10.2
    /tmp/jaxenv/bin/python tests/models/export_large.py
"""
import os
import jax, jax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))


def mlp(x, w1, b1, w2, b2):
    """A bf16 MLP block: [256,512] x [512,2048] -> gelu -> [2048,512] (hidden 1 MiB in bf16)."""
    h = jax.nn.gelu(x @ w1 + b1)
    return h @ w2 + b2


bf = jnp.bfloat16
shapes = [(256, 512), (512, 2048), (2048,), (2048, 512), (512,)]
low = jax.jit(mlp).lower(*[jax.ShapeDtypeStruct(s, bf) for s in shapes])
for kind, text in [("pre", low.as_text(dialect="hlo")), ("opt", low.compile().as_text())]:
    d = os.path.join(HERE, f"mlp_bf16_large_{kind}")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "module.hlo"), "w").write(text)
