#!/usr/bin/env python3
"""Generate the pod-model benchmarks in tests/pod/models/ from JAX (XLA:CPU).

A data-parallel SGD training step of one small transformer encoder block (the block of
tests/models/export.py: 4-head self-attention, residual + layer norm, tanh-GELU MLP,
residual + layer norm; T=32, D=64, F=128, f32), jitted with explicit shardings on a 1-D
mesh ('data',) of N host CPU devices: batch P('data', None, None), params replicated
P(). For N in (8, 64) we write

  tests/pod/models/transformer_dp_train_<N>/module.hlo
        exactly `jax.jit(train_step, in_shardings=..., out_shardings=...)
                 .lower(*args).compile().as_text()`
        (post-optimization, SPMD-partitioned per-device module, num_partitions=N)
  tests/pod/models/transformer_dp_train_8/case.json
        per-device inputs / XLA:CPU outputs (format: tests/spmd/README.md);
        the 64-device case gets a case.json only if it stays under 2 MB (it does not).

Requirements (outside the repo; the Rust tests never need Python):

  python3 -m venv /work/venv-jax
  /work/venv-jax/bin/pip install jax==0.10.2 jaxlib==0.10.2 numpy
  /work/venv-jax/bin/python scripts/gen_pod_models.py [--out tests/pod/models]

The script sets XLA_FLAGS=--xla_force_host_platform_device_count=64 itself. Output is
deterministic (fixed numpy seeds); module.hlo embeds this script's path and line numbers
in its FileNames/FileLocations debug sections.
"""
import argparse
import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=64").strip()

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

from spmd_case_lib import (  # noqa: E402
    case_json, collective_lines, collective_summary, entry_param_shapes,
    entry_result_shapes, hlo_opcodes, ops_from_opcodes, partition_devices,
    shard_literals, verify_partition_mapping)

JAX_VERSION = "0.10.2"
NDEV_TOTAL = 64
SIZES = (8, 64)

T, D, F, HEADS = 32, 64, 128, 4      # sequence length, d_model, MLP width, heads
PER_DEVICE_BATCH = 2                 # sequences per device
LR = 0.1
CASE_JSON_MAX_BYTES = 2 * 1024 * 1024
RTOL, ATOL = 1e-4, 1e-5

# case.json "ops": op names for the HLO opcodes, in this order.
OPCODE_TO_OP = [
    ("all-reduce", "AllReduce"), ("all-gather", "AllGather"),
    ("reduce-scatter", "ReduceScatter"), ("all-to-all", "AllToAll"),
    ("collective-permute", "CollectivePermute"), ("partition-id", "PartitionId"),
    ("dot", "Dot"), ("reduce", "Reduce"), ("transpose", "Transpose"),
    ("broadcast", "Broadcast"), ("exponential", "Exp"), ("tanh", "Tanh"),
    ("rsqrt", "Rsqrt"), ("divide", "Div"), ("maximum", "Max"), ("add", "Add"),
    ("subtract", "Sub"), ("multiply", "Mul"), ("negate", "Neg"),
    ("tuple", "Tuple"), ("get-tuple-element", "GetTupleElement"),
]


# ---------------------------------------------------------------------------
# The model (same block as tests/models/export.py, batched with vmap)
# ---------------------------------------------------------------------------

PARAM_NAMES = ["wq", "wk", "wv", "wo", "ln1_g", "ln1_b", "w1", "b1", "w2", "b2",
               "ln2_g", "ln2_b"]


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def encoder_block(x, wq, wk, wv, wo, g1, b1, w1, bb1, w2, bb2, g2, b2):
    # x: [T, D]; HEADS heads.
    t, d = x.shape
    h = HEADS
    q = (x @ wq).reshape(t, h, d // h).transpose(1, 0, 2)
    k = (x @ wk).reshape(t, h, d // h).transpose(1, 0, 2)
    v = (x @ wv).reshape(t, h, d // h).transpose(1, 0, 2)
    s = jnp.einsum('htd,hsd->hts', q, k) / jnp.sqrt(d // h).astype(jnp.float32)
    p = jax.nn.softmax(s, axis=-1)
    a = jnp.einsum('hts,hsd->htd', p, v).transpose(1, 0, 2).reshape(t, d)
    x = layer_norm(x + a @ wo, g1, b1)
    m = jax.nn.gelu(x @ w1 + bb1, approximate=True) @ w2 + bb2  # tanh GELU: no erf
    return layer_norm(x + m, g2, b2)


def loss_fn(params, batch):
    x, y = batch                                   # [B, T, D] each
    out = jax.vmap(lambda xi: encoder_block(xi, *params))(x)
    return jnp.mean((out - y) ** 2)


def train_step(params, batch):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    new_params = tuple(p - LR * g for p, g in zip(params, grads))
    return new_params, loss


def make_params():
    rng = np.random.default_rng(0)
    n = lambda s, scale: (rng.standard_normal(s) * scale).astype(np.float32)
    return (n((D, D), 0.1), n((D, D), 0.1), n((D, D), 0.1), n((D, D), 0.1),
            np.ones((D,), np.float32), np.zeros((D,), np.float32),
            n((D, F), 0.1), np.zeros((F,), np.float32), n((F, D), 0.1),
            np.zeros((D,), np.float32),
            np.ones((D,), np.float32), np.zeros((D,), np.float32))


def make_batch(ndev):
    rng = np.random.default_rng(1000 + ndev)
    b = ndev * PER_DEVICE_BATCH
    x = rng.standard_normal((b, T, D)).astype(np.float32)
    y = rng.standard_normal((b, T, D)).astype(np.float32)
    return (x, y)


# ---------------------------------------------------------------------------
# Device <-> partition mapping check (as in scripts/gen_spmd_cases.py)
# ---------------------------------------------------------------------------

def check_partition_mapping(ndev):
    perm = list(np.random.default_rng(7).permutation(ndev))
    verify_partition_mapping(jax.devices()[:ndev], perm, "data")
    print("partition mapping verified for %d devices (permuted mesh): partition p -> "
          "local_devices()[p] == mesh.devices.flat[p]" % ndev)


# ---------------------------------------------------------------------------
# Export one size
# ---------------------------------------------------------------------------

def export(out_dir, ndev):
    name = "transformer_dp_train_%d" % ndev
    devs = jax.devices()[:ndev]
    mesh = Mesh(np.array(devs), ("data",))        # partition p = jax device id p
    rep = NamedSharding(mesh, P())
    dat = NamedSharding(mesh, P("data", None, None))

    params, batch = make_params(), make_batch(ndev)
    in_shardings = ((rep,) * len(params), (dat, dat))
    out_shardings = ((rep,) * len(params), rep)
    jitted = jax.jit(train_step, in_shardings=in_shardings, out_shardings=out_shardings)
    compiled = jitted.lower(params, batch).compile()
    text = compiled.as_text()
    header = text.split("\n", 1)[0]
    assert "num_partitions=%d" % ndev in header, header
    assert "replica_count" not in header, header

    opcodes = hlo_opcodes(text)
    assert "custom-call" not in opcodes, "CPU custom-call in %s" % name
    colls = collective_lines(text)

    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "module.hlo"), "w") as f:
        f.write(text)
    print("==", name, "(%d bytes)" % len(text))
    print("  ", header)
    print("   opcodes:", " ".join(opcodes))
    for c in colls:
        print("   ", c)

    # Run it on XLA:CPU, check against an unsharded single-device run.
    devices_in_order = partition_devices(compiled, mesh)
    flat_args, _ = jax.tree_util.tree_flatten((params, batch))
    flat_sh = jax.tree_util.tree_leaves(compiled.input_shardings[0])
    assert len(flat_sh) == len(flat_args)
    placed = [jax.device_put(a, s) for a, s in zip(flat_args, flat_sh)]
    placed_tree = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure((params, batch)), placed)
    result = compiled(*placed_tree)
    results = jax.tree_util.tree_leaves(result)

    with jax.default_device(jax.devices()[0]):
        ref = jax.tree_util.tree_leaves(jax.jit(train_step)(params, batch))
    for got, want in zip(results, ref):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
    loss = float(np.asarray(results[-1]))
    print("   loss = %r (matches single-device jit)" % loss)

    param_shapes = entry_param_shapes(text)
    assert len(param_shapes) == len(placed), (param_shapes, len(placed))
    result_shapes = entry_result_shapes(text)
    assert len(result_shapes) == len(results), (result_shapes, len(results))

    inputs, outputs = [], []
    for p, dev in enumerate(devices_in_order):
        inputs.append("[" + ",".join(shard_literals(param_shapes, placed, dev)) + "]")
        outputs.append('{"tuple":[' + ",".join(shard_literals(result_shapes, results, dev))
                       + "]}")

    coll_summary = collective_summary(colls)
    notes = ("Data-parallel SGD training step (lr=%g) of one transformer encoder block "
             "(4-head self-attention, residual + layer norm, tanh-GELU MLP, residual + "
             "layer norm; T=%d, D=%d, F=%d, f32), MSE loss, jax.value_and_grad. 1-D mesh "
             "('data',) of %d devices (jax device ids 0..%d = partition ids); batch x,y "
             "f32[%d,%d,%d] P('data',None,None) (%d sequences per device), the 12 params "
             "(%s) replicated P(). Entry parameters: the 12 params then x then y (device "
             "shards). Result tuple: the 12 updated params then the loss (all replicated). "
             "Made by scripts/gen_pod_models.py. Collectives XLA:CPU emitted: %s"
             % (LR, T, D, F, ndev, ndev - 1, ndev * PER_DEVICE_BATCH, T, D,
                PER_DEVICE_BATCH, ", ".join(PARAM_NAMES), coll_summary))
    tolerance = '{"rtol":%g,"atol":%g}' % (RTOL, ATOL)
    body = case_json(name, ops_from_opcodes(opcodes, OPCODE_TO_OP), ndev, tolerance, notes,
                     opcodes, inputs, outputs)
    path = os.path.join(d, "case.json")
    if ndev == 8 or len(body) < CASE_JSON_MAX_BYTES:
        with open(path, "w") as f:
            f.write(body)
        print("   wrote case.json (%d bytes)" % len(body))
    else:
        if os.path.exists(path):
            os.remove(path)
        print("   no case.json (would be %d bytes)" % len(body))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pod", "models"))
    a = ap.parse_args()
    out = os.path.abspath(a.out)

    assert jax.__version__ == JAX_VERSION, jax.__version__
    devs = jax.devices()
    assert len(devs) == NDEV_TOTAL and [d.id for d in devs] == list(range(NDEV_TOTAL))
    for n in SIZES:
        check_partition_mapping(n)
    for n in SIZES:
        export(out, n)


if __name__ == "__main__":
    sys.exit(main())
