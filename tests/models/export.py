"""Exports the models in tests/models/ the way a new systole user would: jax.jit(f).lower(...)
for the pre-optimization HLO and .compile().as_text() for the post-optimization HLO (fusions
and all), with inputs and XLA:CPU's outputs in the corpus case format (case.json).

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax==0.10.2 jaxlib==0.10.2
    /tmp/jaxenv/bin/python tests/models/export.py

The tests do not need Python: the generated folders are committed.
"""
import json, os
import numpy as np
import jax, jax.numpy as jnp
from jax import lax

HERE = os.path.dirname(os.path.abspath(__file__))


def lit(a):
    a = np.asarray(a)
    t = {np.dtype('float32'): 'f32', np.dtype('int32'): 's32', np.dtype('bool'): 'pred'}
    if a.dtype == jnp.bfloat16:
        ty, data = 'bf16', [float(x) for x in a.astype(np.float32).ravel()]
    else:
        ty = t[a.dtype]
        data = [bool(x) if ty == 'pred' else (float(x) if ty == 'f32' else int(x)) for x in a.ravel()]
    return {"type": ty, "dims": list(a.shape), "data": data}


def save(name, f, args, notes, rtol=2e-4, atol=2e-5):
    low = jax.jit(f).lower(*args)
    comp = low.compile()
    out = jax.jit(f)(*args)
    outs = out if isinstance(out, (tuple, list)) else None
    expected = {"tuple": [lit(o) for o in outs]} if outs is not None else lit(out)
    for kind, text in [("pre", low.as_text(dialect="hlo")), ("opt", comp.as_text())]:
        d = os.path.join(HERE, f"{name}_{kind}")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "module.hlo"), "w").write(text)
        case = {
            "name": f"{name}_{kind}",
            "ops": [],
            "source": "jax",
            "replicas": 1,
            "check": "close",
            "tolerance": {"rtol": rtol, "atol": atol},
            "notes": notes + (" Post-optimization HLO (XLA:CPU pipeline)." if kind == "opt" else " Pre-optimization HLO."),
            "xla_verified": "executed",
            "inputs": [[lit(a) for a in args]],
            "outputs": [expected],
        }
        json.dump(case, open(os.path.join(d, "case.json"), "w"))


key = jax.random.PRNGKey(0)
ks = jax.random.split(key, 16)
r = lambda i, s, scale=0.1: jax.random.normal(ks[i], s, jnp.float32) * scale


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def encoder_block(x, wq, wk, wv, wo, g1, b1, w1, bb1, w2, bb2, g2, b2):
    # x: [T, D]; 4 heads.
    t, d = x.shape
    h = 4
    q = (x @ wq).reshape(t, h, d // h).transpose(1, 0, 2)
    k = (x @ wk).reshape(t, h, d // h).transpose(1, 0, 2)
    v = (x @ wv).reshape(t, h, d // h).transpose(1, 0, 2)
    s = jnp.einsum('htd,hsd->hts', q, k) / jnp.sqrt(d // h).astype(jnp.float32)
    p = jax.nn.softmax(s, axis=-1)
    a = jnp.einsum('hts,hsd->htd', p, v).transpose(1, 0, 2).reshape(t, d)
    x = layer_norm(x + a @ wo, g1, b1)
    m = jax.nn.gelu(x @ w1 + bb1, approximate=True) @ w2 + bb2
    return layer_norm(x + m, g2, b2)


T, D, F = 32, 64, 128
enc_args = [r(0, (T, D), 1.0), r(1, (D, D)), r(2, (D, D)), r(3, (D, D)), r(4, (D, D)),
            jnp.ones((D,)), jnp.zeros((D,)), r(5, (D, F)), jnp.zeros((F,)), r(6, (F, D)),
            jnp.zeros((D,)), jnp.ones((D,)), jnp.zeros((D,))]
save("transformer_block", lambda *a: encoder_block(*a), enc_args,
     "One transformer encoder block: 4-head self-attention, residual + layer norm, GELU MLP, residual + layer norm (T=32, D=64, F=128).",
     rtol=1e-3, atol=1e-4)


def cnn(x, k1, k2, w):
    y = lax.conv_general_dilated(x, k1, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
    y = jax.nn.relu(y)
    y = lax.conv_general_dilated(y, k2, (2, 2), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
    y = jax.nn.relu(y).mean(axis=(1, 2))
    return jax.nn.log_softmax(y @ w)


save("cnn_small", cnn, [r(7, (2, 12, 12, 3), 1.0), r(8, (3, 3, 3, 8), 0.3), r(9, (3, 3, 8, 16), 0.2), r(10, (16, 10), 0.3)],
     "A small CNN: 3x3 conv + ReLU, strided 3x3 conv + ReLU, global average pool, dense, log-softmax.", rtol=1e-3, atol=1e-4)


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    o = h @ w2 + b2
    return ((o - y) ** 2).mean()


def train_step(w1, b1, w2, b2, x, y):
    params = (w1, b1, w2, b2)
    loss, g = jax.value_and_grad(mlp_loss)(params, x, y)
    new = tuple(p - 0.1 * gp for p, gp in zip(params, g))
    return (loss,) + new


save("mlp_train_step", train_step, [r(11, (16, 32)), jnp.zeros((32,)), r(12, (32, 4)), jnp.zeros((4,)), r(13, (8, 16), 1.0), r(14, (8, 4), 1.0)],
     "One SGD step of a 2-layer tanh MLP with mean-squared error: forward, backward (jax.value_and_grad), update.", rtol=1e-3, atol=1e-5)
