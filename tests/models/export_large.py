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


# Models at the sizes a user brings to a tpu-v4 (16 MiB of VMEM per core), in JAX's default
# f32 and in bf16: activations of several MiB to 64 MiB stream through VMEM (the attention
# scores are f32[2,8,1024,1024], 64 MiB). tests/tests/chip_spill.rs runs every one.
f32 = jnp.float32
S = jax.ShapeDtypeStruct


def save(name, f, *shapes):
    low = jax.jit(f).lower(*shapes)
    for kind, text in [("pre", low.as_text(dialect="hlo")), ("opt", low.compile().as_text())]:
        d = os.path.join(HERE, f"{name}_{kind}")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "module.hlo"), "w").write(text)


def attn(x, wq, wk, wv, wo, g):
    """RMS norm and 8-head self-attention over 1024 tokens of width 512, batch 2, residual."""
    B, T, D = x.shape
    H = 8
    xn = x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g
    q = (xn @ wq).reshape(B, T, H, D // H)
    k = (xn @ wk).reshape(B, T, H, D // H)
    v = (xn @ wv).reshape(B, T, H, D // H)
    s = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(D // H)
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhts,bshd->bthd", p, v).reshape(B, T, D)
    return x + o @ wo


w512 = S((512, 512), f32)
save("attn_f32_large", attn, S((2, 1024, 512), f32), w512, w512, w512, w512, S((512,), f32))


def loss(params, x, y):
    w1, b1, w2, b2 = params
    h = jax.nn.relu(x @ w1 + b1)
    out = h @ w2 + b2
    return jnp.mean((out - y) ** 2)


def step(w1, b1, w2, b2, x, y):
    """One SGD step of a 1024-2048-512 MLP on a batch of 4096 (weight gradients xᵀ·dy)."""
    g = jax.grad(loss)((w1, b1, w2, b2), x, y)
    return tuple(p - 0.01 * d for p, d in zip((w1, b1, w2, b2), g))


save("mlp_train_f32_large", step, S((1024, 2048), f32), S((2048,), f32), S((2048, 512), f32),
     S((512,), f32), S((4096, 1024), f32), S((4096, 512), f32))


def cnn(x, k1, k2):
    """A ResNet basic block: two 3x3 convolutions of 64 features over 56x56, batch 16."""
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.nn.relu(jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn))
    h = jax.lax.conv_general_dilated(h, k2, (1, 1), "SAME", dimension_numbers=dn)
    return jax.nn.relu(h + x)


for name, t in [("cnn_f32_large", f32), ("cnn_bf16_large", bf)]:
    save(name, cnn, S((16, 56, 56, 64), t), S((3, 3, 64, 64), t), S((3, 3, 64, 64), t))
