"""Helpers shared by scripts/gen_spmd_cases.py and scripts/gen_pod_models.py.

Literal encoding (tests/conformance/README.md), HLO text scanning, per-device shard
extraction, the device <-> partition mapping check and the case.json layout
(tests/spmd/README.md). The generators keep their own cases / models.

Importing this module imports jax; a generator sets XLA_FLAGS (the host device count)
before importing it.
"""
import json
import re

import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

# ---------------------------------------------------------------------------
# Literal encoding (tests/conformance/README.md)
# ---------------------------------------------------------------------------

TYPES = {np.dtype(np.float32): "f32", np.dtype(np.int32): "s32",
         np.dtype(np.uint32): "u32", np.dtype(np.bool_): "pred"}


def _fmt_f32(v):
    v = np.float32(v)
    if np.isnan(v):
        return '"nan"'
    if np.isinf(v):
        return '"inf"' if v > 0 else '"-inf"'
    s = str(v)  # numpy prints the shortest decimal that round-trips as f32
    if s in ("0.0", "-0.0"):
        return s
    assert np.float32(float(s)) == v, (s, v)
    return s


def literal(arr):
    arr = np.asarray(arr)
    t = TYPES[arr.dtype]
    flat = arr.reshape(-1)
    if t == "f32":
        data = ",".join(_fmt_f32(v) for v in flat)
    elif t == "pred":
        data = ",".join("true" if v else "false" for v in flat)
    else:
        data = ",".join(str(int(v)) for v in flat)
    dims = ",".join(str(d) for d in arr.shape)
    return '{"type":"%s","dims":[%s],"data":[%s]}' % (t, dims, data)


def jstr(s):
    return json.dumps(s)


# ---------------------------------------------------------------------------
# HLO text helpers
# ---------------------------------------------------------------------------

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%[^\s=]+\s*=\s*(.*)$")


def _skip_shape(rest):
    """Return the text after the result shape of an instruction."""
    rest = rest.lstrip()
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return rest[i + 1:]
        raise ValueError(rest)
    return rest.split(" ", 1)[1]


def hlo_opcodes(text):
    ops = set()
    for line in text.splitlines():
        m = _INSTR.match(line)
        if not m:
            continue
        after = _skip_shape(m.group(1)).lstrip()
        op = re.match(r"([a-z][a-z0-9\-]*)\(", after)
        assert op, line
        ops.add(op.group(1))
    return sorted(ops)


COLLECTIVE_RE = re.compile(
    r"\b(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
    r"collective-broadcast|all-reduce-start|all-gather-start|"
    r"collective-permute-start)\(")


def collective_lines(text):
    """The collective instructions of text, stripped, without their metadata."""
    out = []
    for line in text.splitlines():
        if _INSTR.match(line) and COLLECTIVE_RE.search(line):
            out.append(re.sub(r",\s*metadata=\{[^}]*\}", "", line.strip()))
    return out


def collective_summary(colls):
    """collective_lines(...) without the instruction names, for a case's notes."""
    return "; ".join(re.sub(r"^(ROOT )?%\S+ = ", "", c) for c in colls) or "none"


def _shapes(s):
    shapes = re.findall(r"([a-z0-9]+)\[([0-9,]*)\]", s)
    return [(t, tuple(int(d) for d in dims.split(",") if d)) for t, dims in shapes]


def entry_param_shapes(text):
    """Shapes of the ENTRY parameters, from entry_computation_layout."""
    m = re.search(r"entry_computation_layout=\{\((.*?)\)->", text)
    return _shapes(m.group(1))


def entry_result_shapes(text):
    """Shapes of the ENTRY result (tuple elements in order), from
    entry_computation_layout."""
    m = re.search(r"entry_computation_layout=\{\(.*?\)->(.*?)\}, [a-z_]+=", text)
    return _shapes(m.group(1))


def entry_result_is_tuple(text):
    m = re.search(r"entry_computation_layout=\{\(.*?\)->(.)", text)
    return m.group(1) == "("


def ops_from_opcodes(opcodes, opcode_to_op):
    """Names of the "ops" field: those entries of opcode_to_op (a list of
    (hlo opcode, op name), in output order) whose opcode occurs in opcodes."""
    return [name for oc, name in opcode_to_op if oc in opcodes]


# ---------------------------------------------------------------------------
# Devices, partitions and shards
# ---------------------------------------------------------------------------

def partition_devices(compiled, mesh):
    """Devices in partition order: partition p of the executable runs on
    compiled.runtime_executable().local_devices()[p] (replicas=1), which must be
    mesh.devices.flat."""
    devices_in_order = list(compiled.runtime_executable().local_devices())
    assert devices_in_order == list(mesh.devices.flat), devices_in_order
    return devices_in_order


def shard_on(arr, dev):
    """The shard of a jax.Array held by device dev, as a numpy array."""
    for s in arr.addressable_shards:
        if s.device == dev:
            return np.asarray(s.data)
    raise KeyError(dev)


def shard_literals(shapes, arrays, dev):
    """Literals of dev's shards of arrays, each checked against (type, dims) of shapes."""
    out = []
    for (t, shape), arr in zip(shapes, arrays):
        sh = shard_on(arr, dev)
        assert sh.shape == shape and TYPES[sh.dtype] == t, (sh.shape, shape)
        out.append(literal(sh))
    return out


def verify_partition_mapping(devs, perm, axis):
    """Check that partition p runs on compiled.runtime_executable().local_devices()[p]
    and that this list is mesh.devices.flat, using a 1-D mesh (axis) of devs permuted
    by perm. Returns the devices in partition order."""
    ndev = len(perm)
    mesh = Mesh(np.array([devs[i] for i in perm]), (axis,))

    def body(x):
        return x + jax.lax.axis_index(axis).astype(jnp.float32)

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P(axis), out_specs=P(axis)))
    x = np.zeros((ndev,), np.float32)
    compiled = f.lower(x).compile()
    # axis_index is lowered to partition-id() (masked with `and ndev-1`), so each
    # device's output is its partition id.
    assert "partition-id()" in compiled.as_text()
    order = list(compiled.runtime_executable().local_devices())
    assert order == list(mesh.devices.flat), order
    out = compiled(jax.device_put(x, NamedSharding(mesh, P(axis))))
    for s in out.addressable_shards:
        pid = int(np.asarray(s.data)[0])
        assert order[pid] == s.device, (pid, s.device)
    return order


# ---------------------------------------------------------------------------
# case.json (tests/spmd/README.md)
# ---------------------------------------------------------------------------

def case_json(name, ops, partitions, tolerance, notes, opcodes, inputs, outputs):
    """The text of a case.json. tolerance is the JSON object text, e.g.
    '{"rtol":1e-5,"atol":1e-5}'; inputs / outputs are the per-device JSON texts."""
    lines = [
        '{',
        ' "name": %s,' % jstr(name),
        ' "ops": [%s],' % ",".join(jstr(o) for o in ops),
        ' "source": "jax-spmd",',
        ' "replicas": 1,',
        ' "partitions": %d,' % partitions,
        ' "check": "close",',
        ' "tolerance": %s,' % tolerance,
        ' "notes": %s,' % jstr(notes),
        ' "xla_verified": "executed",',
        ' "hlo_opcodes": [%s],' % ",".join(jstr(o) for o in opcodes),
        ' "inputs": [%s],' % ",".join(inputs),
        ' "outputs": [%s]' % ",".join(outputs),
        '}',
    ]
    body = "\n".join(lines) + "\n"
    json.loads(body)
    return body
