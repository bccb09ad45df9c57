"""MLX's CPU primitives timed for `cargo xtask bench kernels`, beside our kernels that replace them.

    mlx_primitives.py OP:DTYPE:SHAPE...

OP is one of the keys of PRIMITIVES, DTYPE float32 or bfloat16, SHAPE the dimensions joined
by `x` in the order PRIMITIVES documents. Each spec builds seeded random inputs once, then times
`mx.eval` of one call the way criterion samples: a warm-up, then samples of as many calls as
fill about SAMPLE_SECONDS each (at least one), their per-call median and the fastest sample's
per-call mean. Prints one JSON line per spec: {"spec", "median", "fastest", "samples"}
(seconds per call). Runs on the stock wheels as pip installs them.
"""

import json
import sys
import time

import mlx.core as mx
import mlx.nn as nn

SAMPLES = 11
SAMPLE_SECONDS = 0.1
# A call slower than this gets fewer samples (at least 3), so a stock float32 matmul of seconds
# does not take minutes.
BUDGET_SECONDS = 20.0


def random(shape, dtype, key):
    return (mx.random.normal(shape, key=mx.random.key(key)) / 4).astype(dtype)


def matmul(dtype, m, k, n):
    """x [M, K] · Wᵀ, W [N, K] (a linear layer's layout)."""
    x, w = random((m, k), dtype, 1), random((n, k), dtype, 2)
    return [x, w], lambda: x @ w.T


def addmm(dtype, m, k, n):
    """c [M, N] + x [M, K] · Wᵀ."""
    c, x, w = random((m, n), dtype, 3), random((m, k), dtype, 1), random((n, k), dtype, 2)
    return [c, x, w], lambda: mx.addmm(c, x, w.T)


def sdpa(dtype, heads, queries, keys, width):
    """mx.fast.scaled_dot_product_attention with scale 1 (the gemma4 vision tower's)."""
    q = random((1, heads, queries, width), dtype, 1)
    k, v = random((1, heads, keys, width), dtype, 2), random((1, heads, keys, width), dtype, 3)
    return [q, k, v], lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0)


def softmax(dtype, rows, columns):
    x = random((rows, columns), dtype, 1) * 8
    return [x], lambda: mx.softmax(x, axis=-1)


def exp(dtype, elements):
    x = random((elements,), dtype, 1) * 8
    return [x], lambda: mx.exp(x)


def gelu_approx(dtype, elements):
    x = random((elements,), dtype, 1) * 4
    return [x], lambda: nn.gelu_approx(x)


def rms_norm(dtype, rows, width):
    x, w = random((rows, width), dtype, 1), random((width,), dtype, 2) + 1
    return [x, w], lambda: mx.fast.rms_norm(x, w, 1e-6)


def layer_norm(dtype, rows, width):
    x, w, b = random((rows, width), dtype, 1), random((width,), dtype, 2) + 1, random((width,), dtype, 3)
    return [x, w, b], lambda: mx.fast.layer_norm(x, w, b, 1e-6)


PRIMITIVES = dict(matmul=matmul, addmm=addmm, sdpa=sdpa, softmax=softmax, exp=exp, gelu_approx=gelu_approx,
                  rms_norm=rms_norm, layer_norm=layer_norm)


def time_call(call):
    start = time.perf_counter()
    mx.eval(call())
    once = time.perf_counter() - start
    samples = SAMPLES if once * SAMPLES * 2 < BUDGET_SECONDS else max(3, int(BUDGET_SECONDS / max(once, 1e-9)))
    per_sample = max(1, int(SAMPLE_SECONDS / max(once, 1e-9)))
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(per_sample):
            mx.eval(call())
        times.append((time.perf_counter() - start) / per_sample)
    times.sort()
    return times[len(times) // 2], times[0], samples


def main():
    for spec in sys.argv[1:]:
        op, dtype, shape = spec.split(":")
        if op not in PRIMITIVES:
            raise SystemExit(f"unknown primitive `{op}` (choose among {', '.join(PRIMITIVES)})")
        dims = [int(d) for d in shape.split("x")]
        inputs, call = PRIMITIVES[op](getattr(mx, dtype), *dims)
        mx.eval(inputs)
        median, fastest, samples = time_call(call)
        print(json.dumps(dict(spec=spec, median=median, fastest=fastest, samples=samples)), flush=True)


if __name__ == "__main__":
    main()
