#!/usr/bin/env python3
"""Generate the SPMD-partitioned HLO corpus in tests/spmd/ from JAX (XLA:CPU).

Each case is a jitted JAX function with explicit in/out shardings (or a
jax.shard_map) on a mesh of 8 host CPU devices.  For each case we write

  tests/spmd/<case>/module.hlo  exactly `compiled.as_text()` (post-optimization,
                                SPMD-partitioned per-device module, num_partitions=8)
  tests/spmd/<case>/case.json   per-device inputs / outputs (see tests/spmd/README.md)

Requirements (outside the repo; the Rust tests never need Python):

  python3 -m venv /work/venv-jax
  /work/venv-jax/bin/pip install jax==0.10.2 jaxlib==0.10.2 numpy
  /work/venv-jax/bin/python scripts/gen_spmd_cases.py [--out tests/spmd]

The script sets XLA_FLAGS=--xla_force_host_platform_device_count=8 itself.
"""
import argparse
import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

from spmd_case_lib import (  # noqa: E402
    case_json, collective_lines, collective_summary, entry_param_shapes,
    entry_result_is_tuple, hlo_opcodes, literal, ops_from_opcodes, partition_devices,
    shard_literals, shard_on, verify_partition_mapping)

JAX_VERSION = "0.10.2"
NDEV = 8

# case.json "ops": op names for the HLO opcodes, in this order.
OPCODE_TO_OP = [
    ("all-reduce", "AllReduce"), ("all-gather", "AllGather"),
    ("reduce-scatter", "ReduceScatter"), ("all-to-all", "AllToAll"),
    ("collective-permute", "CollectivePermute"), ("partition-id", "PartitionId"),
    ("replica-id", "ReplicaId"), ("dot", "Dot"), ("dynamic-slice", "DynamicSlice"),
    ("dynamic-update-slice", "DynamicUpdateSlice"), ("transpose", "Transpose"),
    ("concatenate", "Concatenate"), ("slice", "Slice"), ("maximum", "Max"),
    ("add", "Add"), ("multiply", "Mul"), ("convert", "ConvertElementType"),
    ("and", "And"), ("tuple", "Tuple"), ("get-tuple-element", "GetTupleElement"),
]


# ---------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------

def ints(rng, shape):
    return rng.integers(-4, 5, size=shape).astype(np.float32)


def run_case(out_dir, name, fn, args, in_shardings, out_shardings, mesh, reference,
             notes):
    """Compile fn with the given shardings, run it on XLA:CPU, write the case."""
    if in_shardings is None:  # shard_map: shardings come from the specs
        jitted = jax.jit(fn)
    else:
        jitted = jax.jit(fn, in_shardings=in_shardings, out_shardings=out_shardings)
    compiled = jitted.lower(*args).compile()
    text = compiled.as_text()
    assert "num_partitions=%d" % NDEV in text.split("\n", 1)[0], text.split("\n", 1)[0]

    # partition p of the executable runs on devices_in_order[p] (replicas=1).
    devices_in_order = partition_devices(compiled, mesh)
    assert len(devices_in_order) == NDEV

    # Place the arguments exactly as the executable expects and read the shards.
    in_sh = compiled.input_shardings[0]
    placed = [jax.device_put(a, s) for a, s in zip(args, in_sh)]
    result = compiled(*placed)
    results = result if isinstance(result, (tuple, list)) else (result,)

    # Check against a numpy reference of the global computation.
    refs = reference(*args)
    refs = refs if isinstance(refs, (tuple, list)) else (refs,)
    assert len(refs) == len(results)
    for got, want in zip(results, refs):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)

    param_shapes = entry_param_shapes(text)
    assert len(param_shapes) == len(args), (param_shapes, len(args))
    is_tuple = entry_result_is_tuple(text)
    assert is_tuple == isinstance(result, (tuple, list))

    inputs, outputs = [], []
    for p, dev in enumerate(devices_in_order):
        inputs.append("[" + ",".join(shard_literals(param_shapes, placed, dev)) + "]")
        outs = [literal(shard_on(r, dev)) for r in results]
        outputs.append('{"tuple":[' + ",".join(outs) + "]}" if is_tuple else outs[0])

    opcodes = hlo_opcodes(text)
    assert "custom-call" not in opcodes, "CPU custom-call in %s" % name
    colls = collective_lines(text)
    full_notes = notes + " Collectives XLA:CPU emitted: " + collective_summary(colls)

    os.makedirs(os.path.join(out_dir, name), exist_ok=True)
    with open(os.path.join(out_dir, name, "module.hlo"), "w") as f:
        f.write(text)
    body = case_json(name, ops_from_opcodes(opcodes, OPCODE_TO_OP), NDEV,
                     '{"rtol":1e-5,"atol":1e-5}', full_notes, opcodes, inputs, outputs)
    with open(os.path.join(out_dir, name, "case.json"), "w") as f:
        f.write(body)
    print("==", name)
    print("  ", text.split("\n", 1)[0])
    for c in colls:
        print("   ", c)
    return text


# ---------------------------------------------------------------------------
# Device <-> partition mapping check
# ---------------------------------------------------------------------------

def check_partition_mapping():
    """Check that partition p runs on compiled.runtime_executable().local_devices()[p]
    and that this list is mesh.devices.flat, using a deliberately permuted mesh."""
    order = verify_partition_mapping(jax.devices(), [3, 1, 7, 0, 5, 2, 6, 4], "x")
    print("partition mapping verified: partition p -> local_devices()[p] == "
          "mesh.devices.flat[p]; permuted order", [d.id for d in order])


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "spmd"))
    a = ap.parse_args()
    out = os.path.abspath(a.out)

    assert jax.__version__ == JAX_VERSION, jax.__version__
    devs = jax.devices()
    assert len(devs) == NDEV and [d.id for d in devs] == list(range(NDEV))
    check_partition_mapping()

    mesh1 = Mesh(np.array(devs), ("x",))                    # partition p = device p
    mesh2 = Mesh(np.array(devs).reshape(2, 4), ("data", "model"))  # p = data*4+model

    def s1(*spec):
        return NamedSharding(mesh1, P(*spec))

    def s2(*spec):
        return NamedSharding(mesh2, P(*spec))

    # 1. data x tensor parallel MLP ------------------------------------------
    rng = np.random.default_rng(1)
    x, w1, b1, w2 = ints(rng, (8, 16)), ints(rng, (16, 32)), ints(rng, (32,)), ints(rng, (32, 16))

    def mlp(x, w1, b1, w2):
        return jax.nn.relu(x @ w1 + b1) @ w2

    run_case(out, "spmd_mlp_dp_tp_2x4", mlp, [x, w1, b1, w2],
             (s2("data", None), s2(None, "model"), s2("model"), s2("model", None)),
             s2("data", None), mesh2,
             lambda x, w1, b1, w2: np.maximum(x @ w1 + b1, 0) @ w2,
             "Data x tensor parallel MLP y = relu(x@W1+b1)@W2 on a 2x4 mesh "
             "('data','model'), partition = data*4+model. x f32[8,16] P('data',None), "
             "W1 f32[16,32] P(None,'model'), b1 f32[32] P('model'), W2 f32[32,16] "
             "P('model',None), out P('data',None). Each device computes a partial "
             "second matmul over its 8 hidden units, summed across the 'model' axis.")

    # 2. matmul with all-gather ----------------------------------------------
    rng = np.random.default_rng(2)
    a_, b_ = ints(rng, (16, 8)), ints(rng, (8, 8))

    def matmul_allgather(a, b):
        return a @ b

    run_case(out, "spmd_matmul_allgather", matmul_allgather, [a_, b_],
             (s1("x", None), s1()), s1(), mesh1, lambda a, b: a @ b,
             "1-D mesh of 8 ('x'). A f32[16,8] P('x',None), B f32[8,8] replicated, "
             "out = A@B replicated: each device multiplies its 2 rows, then the "
             "row blocks are all-gathered so every device holds the full f32[16,8]. "
             "replica_groups use the mesh-axes syntax mesh['axis_0'=8,'axis_1'=1] "
             "{'axis_0'} (one group of all 8 partitions).")

    # 3. matmul with contracting-dim sharding -> reduce-scatter ----------------
    rng = np.random.default_rng(3)
    a_, b_ = ints(rng, (8, 32)), ints(rng, (32, 16))

    def matmul_reducescatter(a, b):
        return a @ b

    run_case(out, "spmd_matmul_reducescatter", matmul_reducescatter, [a_, b_],
             (s1(None, "x"), s1("x", None)), s1("x", None), mesh1, lambda a, b: a @ b,
             "1-D mesh of 8 ('x'). A f32[8,32] P(None,'x'), B f32[32,16] P('x',None) "
             "(contracting dimension sharded), out = A@B with out_shardings "
             "P('x',None): partial products must be summed and scattered by rows. "
             "XLA:CPU does NOT emit reduce-scatter here: it emits an all-reduce "
             "over all 8 partitions followed by a dynamic-slice of row "
             "partition-id() (fused). replica_groups use the mesh-axes syntax.")

    # 4. resharding P('x',None) -> P(None,'x'): all-to-all ---------------------
    rng = np.random.default_rng(4)
    x4 = ints(rng, (16, 16))

    def reshard_alltoall(x):
        return jax.lax.with_sharding_constraint(x * 2, s1(None, "x"))

    run_case(out, "spmd_reshard_transpose_alltoall", reshard_alltoall, [x4],
             (s1("x", None),), s1(None, "x"), mesh1, lambda x: x * 2,
             "1-D mesh of 8 ('x'). x f32[16,16] P('x',None); out = "
             "with_sharding_constraint(x*2, P(None,'x')), out P(None,'x'): resharding "
             "from row blocks to column blocks. XLA emits a tuple-form all-to-all "
             "(8 operands f32[2,1,2], no split_dimension, channel_id=1, no "
             "use_global_device_ids, mesh-axes replica_groups) between slice "
             "fusions and a concatenate fusion.")

    # 5. shard_map ppermute ring + axis_index ---------------------------------
    rng = np.random.default_rng(5)
    x5 = ints(rng, (8, 4))

    def ring_body(x):
        y = jax.lax.ppermute(x, "x", perm=[(i, (i + 1) % NDEV) for i in range(NDEV)])
        return y * (jax.lax.axis_index("x") + 1).astype(jnp.float32)

    ring = jax.shard_map(ring_body, mesh=mesh1, in_specs=P("x", None),
                         out_specs=P("x", None))

    def ring_ref(x):
        return np.roll(x, 1, axis=0) * (np.arange(NDEV, dtype=np.float32) + 1)[:, None]

    run_case(out, "spmd_shard_map_ppermute_ring", ring, [x5], None, None, mesh1, ring_ref,
             "jax.shard_map over a 1-D mesh of 8 ('x'), x f32[8,4] P('x',None) "
             "(one row per device): y = ppermute(x, perm=[(i,(i+1)%8)]) * "
             "(axis_index('x')+1). Device p outputs row (p-1)%8 of x times (p+1). "
             "axis_index lowers to partition-id() & 7.")

    # 6. shard_map psum over one axis of a 2x4 mesh ---------------------------
    rng = np.random.default_rng(6)
    x6 = ints(rng, (4, 8))

    def psum2d_body(x):
        return jax.lax.psum(x, "model"), jax.lax.psum(x, "data")

    psum2d = jax.shard_map(psum2d_body, mesh=mesh2, in_specs=P("data", "model"),
                           out_specs=(P("data", None), P(None, "model")))

    def psum2d_ref(x):
        r_model = x.reshape(2, 2, 4, 2).sum(axis=2)          # [data,row,col] -> f32[4,2]
        r_data = x.reshape(2, 2, 8).sum(axis=0)              # f32[2,8]
        return r_model.reshape(4, 2), r_data

    run_case(out, "spmd_psum_2d_groups", psum2d, [x6], None, None, mesh2, psum2d_ref,
             "jax.shard_map over a 2x4 mesh ('data','model'), partition = data*4+model, "
             "x f32[4,8] P('data','model') (f32[2,2] per device). Returns the tuple "
             "(psum(x,'model') with out_specs P('data',None), psum(x,'data') with "
             "out_specs P(None,'model')): all-reduces with use_global_device_ids=true "
             "whose replica_groups list partition ids {{0,1,2,3},{4,5,6,7}} (model "
             "axis) and {{0,4},{1,5},{2,6},{3,7}} (data axis).")

    # 7. shard_map psum_scatter: a real reduce-scatter -------------------------
    rng = np.random.default_rng(7)
    x7 = ints(rng, (16, 16))

    def psum_scatter_body(x):
        return jax.lax.psum_scatter(x, "x", scatter_dimension=0, tiled=True)

    psum_scatter = jax.shard_map(psum_scatter_body, mesh=mesh1, in_specs=P(None, "x"),
                                 out_specs=P("x", None))

    def psum_scatter_ref(x):
        s = x.reshape(16, 8, 2).sum(axis=1)                  # f32[16,2], sum of column blocks
        return s

    run_case(out, "spmd_shard_map_psum_scatter", psum_scatter, [x7], None, None, mesh1,
             psum_scatter_ref,
             "jax.shard_map over a 1-D mesh of 8 ('x'), x f32[16,16] P(None,'x') "
             "(f32[16,2] per device); psum_scatter(x,'x',scatter_dimension=0,"
             "tiled=True), out_specs P('x',None): device p gets rows 2p..2p+1 of the "
             "sum over devices of their f32[16,2] blocks. Unlike the jit matmul "
             "case, this lowers to a real reduce-scatter.")


if __name__ == "__main__":
    sys.exit(main())
