"""Op-level parity oracle: every block of the `layers` crate, run through the reference's own
modules and functions (mlx-vlm 0.7.10 `models/gemma4/vision.py`, `models/base.py`, `mlx.nn`) on
seeded random inputs.

Parity mode (default) writes, into --out, one safetensors file per (case, dtype label) holding
`weights.<mlx-vlm key>`, `in.<name>` and `out`, plus `manifest.json` listing each entry's block
kind and dimensions; `parity-ops` runs our blocks on the same files. `--small` uses the small
dimensions of the checked-in unit-test fixtures (crates/layers/tests/fixtures/make_fixtures.py
imports this module for that).

Bench mode (`--bench`) times each case's reference call instead (evaluation included), sampled as
criterion samples the same blocks in crates/layers/benches, and prints a JSON header line
{"mlx", "python"} then one line per entry: {"case", "label", "seconds" (median), "fastest" (fastest
sample), "samples", "shapes"};
`cargo xtask bench ops` puts them beside the criterion timings.

Dtype labels: `bfloat16` and `float32` (inputs and weights of that dtype), `float32+bf16w`
(float32 inputs, bf16 weights: the unified embedder's layer norms and patch projection), and
`bfloat16+f32clip` (bf16 weights and activations, float32 clip bounds: promotes to float32).
"""

import json
import math
import os
import statistics
import sys
import time
import zlib
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mlx.core as mx  # noqa: E402
import mlx.nn as nn  # noqa: E402
import numpy as np  # noqa: E402
from mlx.utils import tree_flatten  # noqa: E402
from mlx_vlm.models import base  # noqa: E402
from mlx_vlm.models.gemma4 import config as config_module  # noqa: E402
from mlx_vlm.models.gemma4 import language, vision  # noqa: E402
from reference import parse_args, save  # noqa: E402

DTYPES = {"bfloat16": mx.bfloat16, "float32": mx.float32}
ROPE_THETA = 100.0
RMS_EPS = 1e-6
LAYER_NORM_EPS = 1e-5
# Clip bounds of the clipped projections: tight enough that some inputs and outputs clip.
CLIP = {"input_min": -2.0, "input_max": 2.0, "output_min": -1.0, "output_max": 1.0}


@dataclass(frozen=True)
class Sizes:
    """Dimensions of one run: the real E2B shapes, or the small fixture shapes."""

    grid: tuple  # patch grid (rows, cols); L = rows * cols tokens
    hidden: int
    intermediate: int
    heads: int
    head_dim: int
    padded_tokens: int  # tokens at the end of the sequence that are padding (mask, positions -1)
    embed_tokens: int  # rows of the unified embedder / embed_vision inputs
    patch_dim: int  # unified embedder patch width (48*48*3)
    embed_dim: int  # unified embedder width
    wide_head: tuple  # (heads, tokens) of the head_dim-72 SDPA/RoPE cases (26B/31B heads)
    gqa: tuple  # (q heads, kv heads, tokens) of the grouped-query SDPA case

    @property
    def tokens(self):
        return self.grid[0] * self.grid[1]


REAL = Sizes(
    grid=(42, 60),
    hidden=768,
    intermediate=3072,
    heads=12,
    head_dim=64,
    padded_tokens=120,
    embed_tokens=280,
    patch_dim=6912,
    embed_dim=3840,
    wide_head=(16, 630),
    gqa=(12, 4, 630),
)
# Fixture shapes: every float32 matmul contraction stays <= 128 (BLAS blocking is then the same
# on every CPU).
SMALL = Sizes(
    grid=(3, 4),
    hidden=32,
    intermediate=64,
    heads=2,
    head_dim=16,
    padded_tokens=3,
    embed_tokens=6,
    patch_dim=96,
    embed_dim=48,
    wide_head=(2, 10),
    gqa=(4, 2, 10),
)


@dataclass
class Entry:
    """One (case, dtype label): the block kind and dims our side needs, inputs, weights, and
    the reference call producing the output."""

    case: str
    label: str
    block: str
    dims: dict
    inputs: dict
    weights: dict
    run: object = field(repr=False)


class Rng:
    def __init__(self, case, label):
        self.gen = np.random.default_rng(zlib.crc32(f"{case}/{label}".encode()))

    def normal(self, shape, scale=1.0, dtype=mx.float32):
        values = self.gen.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        return mx.array(values).astype(dtype)


def grid_positions(sizes, padded=0):
    """(x, y) = (col, row) ids of a row-major patch grid, int32 [1, L, 2]; the last `padded`
    rows are padding (-1, -1), as the reference's padded (video / position-id) path has them."""
    rows, cols = sizes.grid
    ys, xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    ids = np.stack([xs.reshape(-1), ys.reshape(-1)], axis=-1).astype(np.int32)
    if padded:
        ids[-padded:] = -1
    return mx.array(ids[None])


def additive_mask(positions, dtype):
    """The encoder's mask, as `VisionModel.__call__` builds it: [B, 1, L, L], 0 / -1e4."""
    padding_positions = mx.all(positions == -1, axis=-1)
    valid_mask = ~padding_positions
    attn_mask = mx.expand_dims(valid_mask, 1) * mx.expand_dims(valid_mask, 2)
    mask_fill = mx.array(-1e4, dtype=dtype)
    attn_mask = mx.where(attn_mask, mx.array(0.0, dtype=dtype), mask_fill)
    return mx.expand_dims(attn_mask, 1)


def init_module(module, rng, dtype, clip_dtype=None):
    """Seeded random parameters for `module`, keyed as mlx-vlm keys them; loaded strictly."""
    weights = {}
    for key, param in tree_flatten(module.parameters()):
        leaf = key.rsplit(".", 1)[-1]
        if leaf in CLIP:
            weights[key] = mx.array(CLIP[leaf], dtype=clip_dtype or dtype)
        elif param.ndim == 2:
            weights[key] = rng.normal(param.shape, 1.0 / math.sqrt(param.shape[1]), dtype)
        elif leaf == "bias":
            weights[key] = rng.normal(param.shape, 0.1, dtype)
        else:  # norm scales, used as-is by the reference: around 1
            weights[key] = (1.0 + rng.normal(param.shape, 0.25)).astype(dtype)
    module.load_weights(list(weights.items()), strict=True)
    return weights


def vision_config(sizes, heads=None, kv_heads=None, head_dim=None):
    return config_module.VisionConfig(
        hidden_size=sizes.hidden,
        intermediate_size=sizes.intermediate,
        num_attention_heads=heads or sizes.heads,
        num_key_value_heads=kv_heads or sizes.heads,
        head_dim=head_dim or sizes.head_dim,
        rms_norm_eps=RMS_EPS,
        use_clipped_linears=True,
        rope_parameters={"rope_theta": ROPE_THETA, "rope_type": "default"},
    )


def block_dims(config):
    return {
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_heads": config.num_attention_heads,
        "num_kv_heads": config.num_key_value_heads,
        "head_dim": config.head_dim,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_parameters["rope_theta"],
        "clipped_linears": config.use_clipped_linears,
    }


def split_label(label):
    """(activation dtype, weight dtype, clip-bound dtype) of a label."""
    if label == "float32+bf16w":
        return mx.float32, mx.bfloat16, mx.bfloat16
    if label == "bfloat16+f32clip":
        return mx.bfloat16, mx.bfloat16, mx.float32
    return DTYPES[label], DTYPES[label], DTYPES[label]


# ---------------------------------------------------------------------------------------------
# Cases: name -> (labels, builder(sizes, label, rng) -> Entry)


def linear(sizes, label, rng, bias):
    act, wdt, _ = split_label(label)
    if bias:  # the unified embedder's patch_dense: [1, N, 6912] x [3840, 6912] + [3840]
        tokens, in_dim, out_dim = sizes.embed_tokens, sizes.patch_dim, sizes.embed_dim
    else:  # a q projection: [1, L, 768] x [768, 768]
        tokens, in_dim, out_dim = sizes.tokens, sizes.hidden, sizes.heads * sizes.head_dim
    module = nn.Linear(in_dim, out_dim, bias=bias)
    weights = init_module(module, rng, wdt)
    x = rng.normal((1, tokens, in_dim), dtype=act)
    return dict(
        block="linear", dims={"in": in_dim, "out": out_dim, "bias": bias}, inputs={"x": x}, weights=weights,
        run=lambda i: module(i["x"]),
    )


def clippable_linear(sizes, label, rng):
    act, wdt, clip = split_label(label)
    in_dim, out_dim = sizes.hidden, sizes.heads * sizes.head_dim
    module = vision.ClippableLinear(in_dim, out_dim, bias=False, use_clipping=True)
    weights = init_module(module, rng, wdt, clip)
    x = rng.normal((1, sizes.tokens, in_dim), 1.5, act)
    return dict(
        block="clippable_linear", dims={"in": in_dim, "out": out_dim, "clipped": True}, inputs={"x": x},
        weights=weights, run=lambda i: module(i["x"]),
    )


def rms_norm(sizes, label, rng, scaled):
    act, wdt, _ = split_label(label)
    if scaled:  # the block norms: [1, L, 768]
        module, shape = vision.RMSNorm(sizes.hidden, eps=RMS_EPS), (1, sizes.tokens, sizes.hidden)
    else:  # embed_vision's pre-projection norm: [1, 280, 768]
        module, shape = language.RMSNormNoScale(sizes.hidden, eps=RMS_EPS), (1, sizes.embed_tokens, sizes.hidden)
    weights = init_module(module, rng, wdt)
    x = rng.normal(shape, 3.0, act)
    return dict(
        block="rms_norm", dims={"dim": sizes.hidden, "scaled": scaled, "eps": RMS_EPS}, inputs={"x": x},
        weights=weights, run=lambda i: module(i["x"]),
    )


def vision_rms_norm(sizes, label, rng, scaled):
    act, wdt, _ = split_label(label)
    module = vision.VisionRMSNorm(sizes.head_dim) if scaled else vision.VisionRMSNormNoScale()
    weights = init_module(module, rng, wdt)
    x = rng.normal((1, sizes.tokens, sizes.heads, sizes.head_dim), 3.0, act)
    return dict(
        block="vision_rms_norm", dims={"dim": sizes.head_dim, "scaled": scaled}, inputs={"x": x}, weights=weights,
        run=lambda i: module(i["x"]),
    )


def layer_norm(sizes, label, rng):
    act, wdt, _ = split_label(label)
    module = nn.LayerNorm(sizes.patch_dim)  # the unified embedder's patch_ln1, eps 1e-5
    weights = init_module(module, rng, wdt)
    x = (rng.normal((1, sizes.embed_tokens, sizes.patch_dim), 0.25) + 0.5).astype(act)
    return dict(
        block="layer_norm", dims={"dim": sizes.patch_dim, "eps": LAYER_NORM_EPS}, inputs={"x": x}, weights=weights,
        run=lambda i: module(i["x"]),
    )


def gelu_approx(sizes, label, rng):
    act, _, _ = split_label(label)
    x = rng.normal((1, sizes.tokens, sizes.intermediate), 2.0, act)
    # nn.gelu_approx is mx.compile'd: this compares our eager graph with the compiled one.
    return dict(block="gelu_approx", dims={}, inputs={"x": x}, weights={}, run=lambda i: nn.gelu_approx(i["x"]))


def geglu_mlp(sizes, label, rng):
    act, wdt, clip = split_label(label)
    config = vision_config(sizes)
    module = vision.VisionMLP(config)
    weights = init_module(module, rng, wdt, clip)
    x = rng.normal((1, sizes.tokens, sizes.hidden), dtype=act)
    return dict(
        block="geglu_mlp",
        dims={"hidden": sizes.hidden, "intermediate": sizes.intermediate, "clipped": True},
        inputs={"x": x}, weights=weights, run=lambda i: module(i["x"]),
    )


def rope(sizes, label, rng, variant):
    act, _, _ = split_label(label)
    heads, head_dim, tokens = sizes.heads, sizes.head_dim, sizes.tokens
    if variant == "1d":
        positions = mx.arange(tokens, dtype=mx.int32)[None]
    elif variant == "hd72":
        heads, tokens = sizes.wide_head
        head_dim = 72
        positions = grid_positions(Sizes(**{**sizes.__dict__, "grid": (tokens // 10, 10)}))
    else:
        positions = grid_positions(sizes, sizes.padded_tokens if variant == "2d_padded" else 0)
    x = rng.normal((1, tokens, heads, head_dim), dtype=act)
    return dict(
        block="rope", dims={"head_dim": head_dim, "theta": ROPE_THETA}, inputs={"x": x, "positions": positions},
        weights={}, run=lambda i: vision.apply_multidimensional_rope(i["x"], i["positions"], ROPE_THETA),
    )


def sdpa(sizes, label, rng, variant):
    act, _, _ = split_label(label)
    if variant == "hd72":
        (heads, tokens), kv_heads, head_dim = sizes.wide_head, sizes.wide_head[0], 72
    elif variant == "gqa":
        heads, kv_heads, tokens = sizes.gqa
        head_dim = sizes.head_dim
    else:
        heads, kv_heads, tokens, head_dim = sizes.heads, sizes.heads, sizes.tokens, sizes.head_dim
    padded = max(1, tokens // 20)
    ids = np.full((1, tokens, 2), 0, dtype=np.int32)
    ids[:, -padded:] = -1
    mask = additive_mask(mx.array(ids), act)
    q = rng.normal((1, heads, tokens, head_dim), 0.5, act)
    k = rng.normal((1, kv_heads, tokens, head_dim), 0.5, act)
    v = rng.normal((1, kv_heads, tokens, head_dim), dtype=act)
    # base.ensure_fused_sdpa is mx.compile'd: this compares our eager graph with the compiled one.
    return dict(
        block="sdpa", dims={"scale": 1.0}, inputs={"q": q, "k": k, "v": v, "mask": mask}, weights={},
        run=lambda i: base.ensure_fused_sdpa(i["q"], i["k"], i["v"], scale=1.0, mask=i["mask"]),
    )


def attention_inputs(sizes, rng, act, padded):
    positions = grid_positions(sizes, sizes.padded_tokens if padded else 0)
    return {
        "x": rng.normal((1, sizes.tokens, sizes.hidden), dtype=act),
        "positions": positions,
        "mask": additive_mask(positions, act),
    }


def vision_attention(sizes, label, rng):
    act, wdt, clip = split_label(label)
    config = vision_config(sizes)
    module = vision.VisionAttention(config)
    weights = init_module(module, rng, wdt, clip)
    inputs = attention_inputs(sizes, rng, act, padded=True)
    return dict(
        block="vision_attention", dims=block_dims(config), inputs=inputs, weights=weights,
        run=lambda i: module(i["x"], i["positions"], i["mask"]),
    )


def vision_block(sizes, label, rng):
    act, wdt, clip = split_label(label)
    config = vision_config(sizes)
    module = vision.VisionTransformerBlock(config)
    weights = init_module(module, rng, wdt, clip)
    inputs = attention_inputs(sizes, rng, act, padded=False)
    return dict(
        block="vision_block", dims=block_dims(config), inputs=inputs, weights=weights,
        run=lambda i: module(i["x"], i["positions"], i["mask"]),
    )


BOTH = ["bfloat16", "float32"]
CASES = [
    ("linear", BOTH, lambda s, l, r: linear(s, l, r, bias=False)),
    ("linear_bias", BOTH + ["float32+bf16w"], lambda s, l, r: linear(s, l, r, bias=True)),
    ("clippable_linear", BOTH + ["bfloat16+f32clip"], clippable_linear),
    ("rms_norm", BOTH, lambda s, l, r: rms_norm(s, l, r, scaled=True)),
    ("rms_norm_no_scale", BOTH, lambda s, l, r: rms_norm(s, l, r, scaled=False)),
    ("vision_rms_norm", BOTH, lambda s, l, r: vision_rms_norm(s, l, r, scaled=True)),
    ("vision_rms_norm_no_scale", BOTH, lambda s, l, r: vision_rms_norm(s, l, r, scaled=False)),
    ("layer_norm", BOTH + ["float32+bf16w"], layer_norm),
    ("gelu_approx", BOTH, gelu_approx),
    ("geglu_mlp", BOTH, geglu_mlp),
    ("rope_2d", BOTH, lambda s, l, r: rope(s, l, r, "2d")),
    ("rope_2d_padded", BOTH, lambda s, l, r: rope(s, l, r, "2d_padded")),
    ("rope_2d_hd72", BOTH, lambda s, l, r: rope(s, l, r, "hd72")),
    ("rope_1d", BOTH, lambda s, l, r: rope(s, l, r, "1d")),
    ("sdpa", BOTH, lambda s, l, r: sdpa(s, l, r, "default")),
    ("sdpa_hd72", BOTH, lambda s, l, r: sdpa(s, l, r, "hd72")),
    ("sdpa_gqa", BOTH, lambda s, l, r: sdpa(s, l, r, "gqa")),
    ("vision_attention", BOTH, vision_attention),
    ("vision_block", BOTH, vision_block),
]


def entries(sizes, only=None):
    """Every (case, label) entry, built lazily (large inputs exist one entry at a time). `only`
    keeps the entries whose case name or `case/label` it lists."""
    for case, labels, build in CASES:
        for label in labels:
            if only and case not in only and f"{case}/{label}" not in only:
                continue
            yield Entry(case=case, label=label, **build(sizes, label, Rng(case, label)))


def tensors_of(entry, output):
    tensors = {f"weights.{k}": v for k, v in entry.weights.items()}
    tensors.update({f"in.{k}": v for k, v in entry.inputs.items()})
    tensors["out"] = output
    return tensors


def manifest_row(entry, output, file=None):
    row = {"case": entry.case, "label": entry.label, "block": entry.block, "dims": entry.dims,
           "out_dtype": str(output.dtype).removeprefix("mlx.core."), "out_shape": list(output.shape)}
    if file:
        row["file"] = file
    return row


def write_parity(out_dir, sizes, only):
    manifest = []
    for entry in entries(sizes, only):
        start = time.perf_counter()
        output = entry.run(entry.inputs)
        mx.eval(output)
        seconds = time.perf_counter() - start
        file = f"{entry.case}.{entry.label}.safetensors"
        save(os.path.join(out_dir, file), tensors_of(entry, output))
        manifest.append(manifest_row(entry, output, file))
        print(f"  reference {entry.case:<26} {entry.label:<18} {seconds:8.3f} s", file=sys.stderr, flush=True)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


# Cases benched with criterion's "light" settings in crates/layers/benches (common::light: 0.5 s
# warm-up, 20 samples of linearly growing iteration counts filling ~3 s); every other case uses
# the "heavy" settings (common::heavy: 1 s warm-up, 10 samples of equal iteration counts filling
# ~5 s, at least one call each).
LIGHT_BENCHES = {"rms_norm", "rms_norm_no_scale", "vision_rms_norm", "vision_rms_norm_no_scale", "layer_norm",
                 "rope_2d", "rope_1d"}


def time_call(call, light):
    """Median and minimum over samples of the mean time of one call, sampled as criterion
    samples (see LIGHT_BENCHES), so that both sides report the same statistics. Returns
    (median seconds, fastest sample's seconds, samples)."""
    warm_up, samples, measurement = (0.5, 20, 3.0) if light else (1.0, 10, 5.0)
    start, runs = time.perf_counter(), 0
    while runs == 0 or time.perf_counter() - start < warm_up:
        mx.eval(call())
        runs += 1
    per_call = (time.perf_counter() - start) / runs
    if light:  # criterion's linear sampling: d, 2d, ..., 20d calls
        step = max(1, math.ceil(measurement / per_call / (samples * (samples + 1) / 2)))
        counts = [i * step for i in range(1, samples + 1)]
    else:  # criterion's flat sampling
        counts = [max(1, math.ceil(measurement / (samples * per_call)))] * samples
    means = []
    for iterations in counts:
        start = time.perf_counter()
        for _ in range(iterations):
            mx.eval(call())
        means.append((time.perf_counter() - start) / iterations)
    return statistics.median(means), min(means), samples


def describe(entry):
    """The shapes of a case's inputs and largest weight, e.g. `x [1, 2520, 768], W [768, 768]`."""
    parts = [f"{k} {list(v.shape)}" for k, v in entry.inputs.items() if k not in ("mask", "positions")]
    matrices = [v for v in entry.weights.values() if v.ndim == 2]
    if matrices:
        parts.append(f"W {list(max(matrices, key=lambda w: w.size).shape)}")
    return ", ".join(parts)


def bench(sizes, only):
    print(json.dumps({"mlx": mx.__version__, "python": sys.version.split()[0]}), flush=True)
    for entry in entries(sizes, only):
        mx.eval(list(entry.inputs.values()), list(entry.weights.values()))
        # Every case starts from an empty MLX buffer cache, as in the criterion benches: what
        # earlier cases left there would otherwise decide how often this one reaches the system
        # allocator.
        mx.clear_cache()
        seconds, fastest, samples = time_call(lambda: entry.run(entry.inputs), entry.case in LIGHT_BENCHES)
        print(json.dumps({"case": entry.case, "label": entry.label, "seconds": seconds, "fastest": fastest,
                          "samples": samples, "shapes": describe(entry)}), flush=True)


def main():
    def extra(parser):
        parser.add_argument("--small", action="store_true", help="fixture shapes instead of the real E2B shapes")
        parser.add_argument("--bench", action="store_true", help="time the reference instead of writing outputs")
        parser.add_argument("--only", nargs="*", help="case names (or case/label) to run")

    args = parse_args(__doc__.splitlines()[0], extra, default_device="cpu")
    sizes = SMALL if args.small else REAL
    if args.bench:
        bench(sizes, args.only)
    else:
        write_parity(args.out, sizes, args.only)


if __name__ == "__main__":
    main()
