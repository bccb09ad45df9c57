"""MLX's CPU primitives timed for `cargo xtask bench kernels`, beside our kernels that replace them.

    mlx_primitives.py OP:DTYPE:SHAPE...

OP is one of the keys of PRIMITIVES or `quantized_matmul_<quantization>` (see quantized_matmul), DTYPE float32, bfloat16 or float32+bf16w (float32
activations, bfloat16 weights), SHAPE the dimensions joined by `x` in the order each function's
arguments give. Each spec builds seeded random inputs once, then times
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
    """Seeded normal values / 4 in `dtype` (an MLX dtype or its name)."""
    dtype = getattr(mx, dtype) if isinstance(dtype, str) else dtype
    return (mx.random.normal(shape, key=mx.random.key(key)) / 4).astype(dtype)


def weight_dtype(dtype):
    """(activations, weights) dtypes of a DTYPE argument."""
    return (mx.float32, mx.bfloat16) if dtype == "float32+bf16w" else (getattr(mx, dtype),) * 2


def matmul(dtype, m, k, n):
    """x [M, K] · Wᵀ, W [N, K] (a linear layer's layout)."""
    xd, wd = weight_dtype(dtype)
    x, w = random((m, k), xd, 1), random((n, k), wd, 2)
    return [x, w], lambda: x @ w.T


def addmm(dtype, m, k, n):
    """bias [N] + x [M, K] · Wᵀ (a linear layer with a bias)."""
    xd, wd = weight_dtype(dtype)
    b, x, w = random((n,), wd, 3), random((m, k), xd, 1), random((n, k), wd, 2)
    return [b, x, w], lambda: mx.addmm(b, x, w.T)


def quantized_matmul(quantization, dtype, m, k, n):
    """x [M, K] · Wᵀ with W [N, K] quantized by mx.quantize as `quantization` names it
    (`affine<bits>g<group>`, `mxfp4`, `nvfp4`, `mxfp8`): `mx.quantized_matmul(transpose=True)`,
    as nn.QuantizedLinear runs it. The dense weights are bfloat16 (affine scales and biases
    follow them); x is in the product's dtype (float32+bf16w: float32)."""
    xd = mx.float32 if dtype == "float32+bf16w" else getattr(mx, dtype)
    if quantization.startswith("affine"):
        bits, group = (int(v) for v in quantization.removeprefix("affine").split("g"))
        mode = "affine"
    else:
        mode, bits, group = quantization, {"mxfp4": 4, "nvfp4": 4, "mxfp8": 8}[quantization], \
            {"mxfp4": 32, "nvfp4": 16, "mxfp8": 32}[quantization]
    x, w = random((m, k), xd, 1), random((n, k), mx.bfloat16, 2)
    parts = mx.quantize(w, group_size=group, bits=bits, mode=mode)
    wq, scales = parts[0], parts[1]
    biases = parts[2] if mode == "affine" else None
    inputs = [x, wq, scales] + ([biases] if biases is not None else [])
    return inputs, lambda: mx.quantized_matmul(x, wq, scales, biases, transpose=True, group_size=group, bits=bits,
                                               mode=mode)


def sdpa(dtype, heads, tokens, width):
    """mx.fast.scaled_dot_product_attention with scale 1 (the gemma4 vision tower's)."""
    q, k, v = (random((1, heads, tokens, width), dtype, seed) for seed in (1, 2, 3))
    return [q, k, v], lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0)


def sdpa_mask(dtype, heads, tokens, width):
    """sdpa with the tower's additive [1, 1, L, L] mask (-1e4 to and from the last 100 tokens)."""
    q, k, v = (random((1, heads, tokens, width), dtype, seed) for seed in (1, 2, 3))
    real = mx.arange(tokens) < tokens - 100
    mask = mx.where(real[:, None] & real[None, :], 0.0, -1e4).astype(getattr(mx, dtype))[None, None]
    return [q, k, v, mask], lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0, mask=mask)


def softmax(dtype, rows, columns):
    x = random((rows, columns), dtype, 1) * 8
    return [x], lambda: mx.softmax(x, axis=-1)


def exp(dtype, elements):
    x = random((elements,), dtype, 1) * 8
    return [x], lambda: mx.exp(x)


def tanh(dtype, elements):
    x = random((elements,), dtype, 1) * 4
    return [x], lambda: mx.tanh(x)


def gelu_approx_mul(dtype, elements):
    """The gated MLP's activation: nn.gelu_approx(gate) * up."""
    gate, up = random((elements,), dtype, 1) * 4, random((elements,), dtype, 2) * 4
    return [gate, up], lambda: nn.gelu_approx(gate) * up


def add(dtype, elements):
    a, b = random((elements,), dtype, 1), random((elements,), dtype, 2)
    return [a, b], lambda: a + b


def rms_norm(dtype, rows, width):
    x, w = random((rows, width), dtype, 1), random((width,), dtype, 2) + 1
    return [x, w], lambda: mx.fast.rms_norm(x, w, 1e-6)


def layer_norm(dtype, rows, width):
    x, w, b = random((rows, width), dtype, 1), random((width,), dtype, 2) + 1, random((width,), dtype, 3)
    return [x, w, b], lambda: mx.fast.layer_norm(x, w, b, 1e-5)


def vision_rms_norm(dtype, rows, width):
    """mlx-vlm's gemma4 VisionRMSNorm, op by op (float32 inside, cast back)."""
    x, w = random((rows, width), dtype, 1), random((width,), dtype, 2) + 1

    def call():
        f = x.astype(mx.float32)
        var = mx.mean(f**2, axis=-1, keepdims=True)
        return (f * mx.rsqrt(var + 1e-6) * w.astype(mx.float32)).astype(x.dtype)

    return [x, w], call


def rope(dtype, tokens, heads, width):
    """mlx-vlm's apply_multidimensional_rope with its tables given: 2 partitions of width/2."""
    t = getattr(mx, dtype)
    c = width // 2
    x = random((1, tokens, heads, width), t, 1)
    tables = [(random((1, tokens, 1, c), t, 2 + 2 * d), random((1, tokens, 1, c), t, 3 + 2 * d)) for d in range(2)]

    def rotate_half(u):
        return mx.concatenate([-u[..., c // 2:], u[..., : c // 2]], axis=-1)

    def call():
        parts = [x[..., d * c:(d + 1) * c] for d in range(2)]
        return mx.concatenate([u * cos + rotate_half(u) * sin for u, (cos, sin) in zip(parts, tables)], axis=-1)

    return [x] + [a for pair in tables for a in pair], call


PRIMITIVES = dict(matmul=matmul, addmm=addmm, sdpa=sdpa, sdpa_mask=sdpa_mask, softmax=softmax, exp=exp, tanh=tanh,
                  gelu_approx_mul=gelu_approx_mul, add=add, rms_norm=rms_norm, layer_norm=layer_norm,
                  vision_rms_norm=vision_rms_norm, rope=rope)


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
        dims = [int(d) for d in shape.split("x")]
        if op.startswith("quantized_matmul_"):
            inputs, call = quantized_matmul(op.removeprefix("quantized_matmul_"), dtype, *dims)
        elif op in PRIMITIVES:
            inputs, call = PRIMITIVES[op](dtype, *dims)
        else:
            raise SystemExit(f"unknown primitive `{op}` (choose among {', '.join(PRIMITIVES)}, "
                             "quantized_matmul_<affine<bits>g<group>|mxfp4|nvfp4|mxfp8>)")
        mx.eval(inputs)
        median, fastest, samples = time_call(call)
        print(json.dumps(dict(spec=spec, median=median, fastest=fastest, samples=samples)), flush=True)


if __name__ == "__main__":
    main()
