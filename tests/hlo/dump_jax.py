import jax, jax.numpy as jnp
from jax import lax
import os
def save(name, f, *args):
    low = jax.jit(f).lower(*args)
    c = low.compile()
    open(f"{name}.opt.hlo","w").write(c.as_text())
    open(f"{name}.pre.hlo","w").write(low.as_text(dialect="hlo"))
x = jnp.ones((8,128), jnp.float32)
save("mlp", lambda x, w: jax.nn.relu(x @ w).sum(axis=1), x, jnp.ones((128,16)))
save("softmax", lambda x: jax.nn.softmax(x, axis=-1), x)
save("while_loop", lambda x: lax.fori_loop(0, 10, lambda i, c: c * 2.0 + i, x), jnp.ones((4,)))
save("conv", lambda x, k: lax.conv_general_dilated(x, k, (1,1), 'SAME'), jnp.ones((1,3,16,16)), jnp.ones((4,3,3,3)))
save("sort_cond", lambda x: lax.cond(x.sum() > 0, lambda y: jnp.sort(y), lambda y: -y, x), jnp.ones((16,)))
save("gather_scatter", lambda x, i: x.at[i].add(x[i] * 2), jnp.ones((10,3)), jnp.array([1,3,3]))
save("composite", lambda x: lax.composite(lambda y, *, a: y * a, name="my.comp")(x, a=2.0), jnp.ones((4,)))
