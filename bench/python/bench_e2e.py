"""Reference side of `cargo xtask bench e2e`: inputs, and mlx-vlm's own path timed bytes → features.

Three commands (all write under --out):

- `make`: the seeded checkpoints (published layout, `model.`-prefixed keys, bf16; the quantized
  ones as checkpoints.py writes published quants) and the images
  (two photographs, and 8 same-size ones for the throughput case),
  created once and reused while their definition is unchanged. Checkpoints are written with
  vision.py's functions (the reference's own modules give names and shapes). Prints one JSON line
  per model with the dimensions the harness counts matmul FLOPs from, and one per image.
- `run --model DIR --image FILE --budget N --dtype bfloat16|float32 --runs N [--save FILE]`:
  builds the reference Model, loads the checkpoint the reference's way (read, Model.sanitize,
  load_weights, or for a quantized checkpoint mlx-vlm's load_model_weights; for float32 every
  parameter is then cast with Module.set_dtype) — timed as
  `load_seconds` — then times `--runs` runs of mlx_vlm.utils.load_image → the reference image
  processor (Gemma4ImageProcessor / Gemma4UnifiedImageProcessor.preprocess) →
  Model.encode_image (gemma4) / Model.get_image_features (gemma4_unified) → mx.eval. Prints
  one JSON line in the format of our `bench_encode` example.
- `pixels --model DIR --image FILE --budget N --save FILE`: the reference image processor's pixels
  for one image (load_image → Gemma4ImageProcessor / Gemma4UnifiedImageProcessor, as `run` does),
  written for llama.cpp's encoder (`bench/llama-mtmd/encode_image.cpp`): the 8 bytes "GVPIXF32",
  width and height as little-endian uint32, then height × width × 3 float32 values (RGB
  interleaved, row-major). gemma4: the resized, rescaled image; gemma4_unified: the image its
  real (unpadded) 48×48 patches tile, put back together from the patches and their positions.
  Prints one JSON line (width, height, soft tokens).
- `compare --reference FILE FILE...`: relative RMSE of each file's `features` against the
  reference file's (sqrt(mean((x - r)^2)) / sqrt(mean(r^2)), in float64), their largest absolute
  difference, and whether they are identical bit for bit (same dtype and bytes); one JSON line
  per file.

`cargo xtask bench e2e` runs it with the project's venv: mlx-vlm on the stock MLX wheels as pip
installs them (their float32 matmuls run in the BLAS the mlx-cpu wheel bundles).
"""

import argparse
import json
import os
import sys
import time

import mlx.core as mx
import numpy as np
from PIL import Image

# The parity suite's reference modules (`crates/parity/python`): the seeded checkpoints and the reference's inputs.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "parity", "python"))
import vision  # noqa: E402
from mlx_vlm.utils import load_image  # noqa: E402
from preprocess import photo  # noqa: E402
from reference import select_device  # noqa: E402

SEED = 20260

# The reference's vision attention has scale 1 (q and k are RMS-normalized instead): with
# vision.py's random norm weights (about 1) the logits of head_dim d have a standard deviation of
# about sqrt(d), every softmax is nearly one-hot and the random tower is chaotic (a relative
# perturbation of 1e-3 of the float32 input reaches 50% at the e2b tower's output), so no
# precision could be compared on it. Scaling the q_norm and k_norm weights by d^(-1/4) gives the
# logits the spread of 1/sqrt(d) attention, as trained weights do; the same perturbation then
# stays 1e-3 through all 16 layers. Timing is unaffected (same shapes, same ops).
QK_NORM_EXPONENT = -0.25

# Checkpoints. The e2b tower has its real dimensions but no clipped linears, so candle's
# VisionTower (which has none) computes the same function; the 26B-A4B / 31B-shaped tower has
# their width, head_dim 72 and standardization with few layers; the unified embedder has the
# 12B dimensions (its defaults). The quantized models (`quant`, see QUANTIZED below) come after.
MODELS = [
    dict(name="e2b", model_type="gemma4", dtype="bfloat16", text_hidden=1536, layout="raw",
         vision=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=16, num_attention_heads=12,
                     num_key_value_heads=12, head_dim=64, use_clipped_linears=False, standardize=False)),
    dict(name="31b-shaped", model_type="gemma4", dtype="bfloat16", text_hidden=5376, layout="raw",
         vision=dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=4, num_attention_heads=16,
                     num_key_value_heads=16, head_dim=72, use_clipped_linears=False, standardize=True)),
    dict(name="unified-12b", model_type="gemma4_unified", dtype="bfloat16", text_hidden=3840, layout="raw",
         vision=dict()),
]

PROJECTOR = "embed_vision.embedding_projection"
PATCH_DENSE = "vision_embedder.patch_dense"


def quantized(base, name, quant):
    """`base` (a model above, the same seeded weights) with the modules of `quant` quantized by
    MLX's `nn.quantize` as checkpoints.py writes published quants (`modules`: module paths, or
    checkpoints.TOWER for every clippable linear of the tower; `overrides`: per-module bits,
    group size or mode)."""
    case = next(m for m in MODELS if m["name"] == base)
    return dict(case, name=name, base=base, quant=quant)


def quant(mode, group_size, bits, modules, overrides=None):
    return dict(mode=mode, group_size=group_size, bits=bits, modules=modules, overrides=overrides or {})


# The quantized layouts of the targets, each beside its bf16 model: the unified
# embedder in the legacy mlx-community layout (patch_dense affine 4-bit with groups of 64, the
# projector mxfp4), e2b with the legacy converters' quantized projector (affine 4-bit, groups of
# 64), and e2b with every tower linear (and the projector) affine 4-bit as third-party
# conversions have it. Only ours and mlx-vlm in the checkpoint's dtype run them.
QUANTIZED = [
    quantized("unified-12b", "unified-12b-legacy-q4",
              quant("affine", 64, 4, [PATCH_DENSE, PROJECTOR], {PROJECTOR: {"mode": "mxfp4", "group_size": 32}})),
    quantized("e2b", "e2b-q4-projector", quant("affine", 64, 4, [PROJECTOR])),
    quantized("e2b", "e2b-q4-tower", quant("affine", 64, 4, [vision.TOWER, PROJECTOR])),
]
MODELS += QUANTIZED

# Images: photographs (scikit-image's astronaut resized with Pillow's BICUBIC, seeded noise, as
# the preprocess bench makes them), saved as JPEG quality 90 (4:2:0); the throughput case's 8
# same-size images differ in their noise.
IMAGES = [("photo_640x480.jpg", 480, 640, 31), ("photo_4000x3000.jpg", 3000, 4000, 32)] + [
    (f"batch_640x480_{i}.jpg", 480, 640, 40 + i) for i in range(8)]


def make(out):
    for case in MODELS:
        directory = os.path.join(out, "models", case["name"])
        config = vision.model_config(case)
        model = vision.build_reference_model(config)
        stamp = json.dumps(dict(case=case, seed=SEED, qk_norm_exponent=QK_NORM_EXPONENT), sort_keys=True)
        stamp_path = os.path.join(directory, "bench_e2e.stamp")
        if not (os.path.exists(stamp_path) and open(stamp_path).read() == stamp):
            print(f"bench_e2e.py: writing {directory}", file=sys.stderr, flush=True)
            weights = vision.random_weights(vision.vision_parameters(model), case["dtype"], SEED)
            weights = condition_attention(weights, case)
            if case.get("quant"):
                vision.write_quantized_checkpoint(case, config, directory, SEED, weights=weights, budget=280)
            else:
                vision.save_checkpoint(directory, config, weights, case["layout"], 280)
            with open(stamp_path, "w") as f:
                f.write(stamp)
        print(json.dumps(dimensions(case, model, directory)), flush=True)
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    for name, h, w, seed in IMAGES:
        path = os.path.join(out, "images", name)
        if not os.path.exists(path):
            Image.fromarray(photo(h, w, seed)).save(path, quality=90)
        print(json.dumps(dict(image=name, path=path, width=w, height=h)), flush=True)


def condition_attention(weights, case):
    """q_norm / k_norm weights times head_dim^QK_NORM_EXPONENT (see there), in the checkpoint dtype."""
    if case["model_type"] != "gemma4":
        return weights
    factor = case["vision"]["head_dim"] ** QK_NORM_EXPONENT
    return {name: (w.astype(mx.float32) * factor).astype(w.dtype) if name.endswith(("q_norm.weight", "k_norm.weight"))
            else w for name, w in weights.items()}


def dimensions(case, model, directory):
    """What the harness needs to count matmul FLOPs, from the reference model's config."""
    entry = dict(model=case["name"], model_type=case["model_type"], dir=directory, text_hidden=case["text_hidden"])
    if case.get("quant"):
        entry.update(base=case["base"], quantization=describe_quant(case["quant"]))
    v = model.config.vision_config
    if case["model_type"] == "gemma4":
        entry.update(hidden=v.hidden_size, intermediate=v.intermediate_size, layers=v.num_hidden_layers,
                     heads=v.num_attention_heads, kv_heads=v.num_key_value_heads, head_dim=v.head_dim,
                     patch_dim=3 * v.patch_size**2, pool=v.pooling_kernel_size, standardize=int(v.standardize))
    else:
        patch = v.patch_size * v.pooling_kernel_size
        entry.update(patch_dim=3 * patch**2, embed=v.mm_embed_dim, output=v.output_proj_dims)
    return entry


def describe_quant(q):
    """`module: mode bits/group, …` of a `quant` (what the e2e table says of the model)."""
    def one(settings):
        mode = settings.get("mode", q["mode"])
        if mode != "affine":
            return mode
        return f"affine {settings.get('bits', q['bits'])}-bit g{settings.get('group_size', q['group_size'])}"
    names = {PATCH_DENSE: "patch_dense", PROJECTOR: "projector", vision.TOWER: "tower linears"}
    return ", ".join(f"{names.get(m, m)} {one(q['overrides'].get(m, {}))}" for m in q["modules"])


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def run(args):
    start = time.perf_counter()
    with open(os.path.join(args.model, "config.json")) as f:
        config = json.load(f)
    model = vision.build_reference_model(config)
    if config.get("quantization"):
        vision.load_quantized_reference(model, args.model)
    else:
        vision.load_reference(model, args.model)
    if args.dtype == "float32":
        model.set_dtype(mx.float32)
        mx.eval(model.parameters())
    load_seconds = time.perf_counter() - start

    v = config["vision_config"]
    unified = config["model_type"] == "gemma4_unified"
    kind = vision.unified_processing.Gemma4UnifiedImageProcessor if unified else \
        vision.gemma4_processing.Gemma4ImageProcessor
    processor = kind(patch_size=v.get("patch_size", 16), pooling_kernel_size=v.get("pooling_kernel_size", 3))

    def encode():
        images = [load_image(p) for p in args.image]
        if unified:
            data = processor.preprocess(images, max_soft_tokens=args.budget)
            data = data[0] if isinstance(data, tuple) else data
            features = model.get_image_features(mx.array(data["pixel_values"]),
                                                mx.array(data["image_position_ids"]))
            soft_tokens = [int(n) for n in data["num_soft_tokens_per_image"]]
        else:
            data, soft_tokens = processor.preprocess(images, max_soft_tokens=args.budget)
            pixels = data["pixel_values"]
            pixels = mx.array(pixels) if isinstance(pixels, np.ndarray) else [mx.array(p) for p in pixels]
            features = model.encode_image(pixels)
            features = features.reshape(-1, features.shape[-1])
        mx.eval(features)
        return features, soft_tokens

    seconds = []
    for _ in range(args.runs):
        start = time.perf_counter()
        features, soft_tokens = encode()
        seconds.append(time.perf_counter() - start)
    if args.save:
        mx.save_safetensors(args.save, {"features": features})
    median = sorted(seconds)[len(seconds) // 2]
    print(json.dumps(dict(side="mlx-vlm", dtype=args.dtype, load_seconds=load_seconds, seconds=seconds,
                          median=median, soft_tokens=[int(n) for n in soft_tokens],
                          features_shape=list(features.shape), features_dtype=str(features.dtype).split(".")[-1],
                          peak_rss_bytes=peak_rss_bytes(), mlx_peak_bytes=mx.get_peak_memory(),
                          mlx=mx.__version__)), flush=True)


def pixels(args):
    with open(os.path.join(args.model, "config.json")) as f:
        config = json.load(f)
    v = vision.build_reference_model(config).config.vision_config
    image = load_image(args.image)
    if config["model_type"] == "gemma4_unified":
        processor = vision.unified_processing.Gemma4UnifiedImageProcessor(
            patch_size=v.patch_size, pooling_kernel_size=v.pooling_kernel_size)
        data = processor.preprocess([image], max_soft_tokens=args.budget)
        data = data[0] if isinstance(data, tuple) else data
        count = int(data["num_soft_tokens_per_image"][0])
        patches = np.asarray(data["pixel_values"][0])[:count]
        positions = np.asarray(data["image_position_ids"][0])[:count]
        p = v.model_patch_size
        cols, rows = int(positions[:, 0].max()) + 1, int(positions[:, 1].max()) + 1
        hwc = np.zeros((rows * p, cols * p, 3), dtype=np.float32)
        for patch, (x, y) in zip(patches, positions):
            hwc[y * p:(y + 1) * p, x * p:(x + 1) * p] = patch.reshape(p, p, 3)
    else:
        processor = vision.gemma4_processing.Gemma4ImageProcessor(
            patch_size=v.patch_size, pooling_kernel_size=v.pooling_kernel_size)
        data, soft_tokens = processor.preprocess([image], max_soft_tokens=args.budget)
        pixels = data["pixel_values"]
        chw = np.asarray(pixels[0])
        hwc = np.ascontiguousarray(chw.transpose(1, 2, 0), dtype=np.float32)
        count = int(soft_tokens[0])
    height, width = hwc.shape[:2]
    with open(args.save, "wb") as f:
        f.write(b"GVPIXF32" + np.array([width, height], dtype="<u4").tobytes() + hwc.astype("<f4").tobytes())
    print(json.dumps(dict(pixels=args.save, width=width, height=height, soft_tokens=count)), flush=True)


def compare(args):
    reference = mx.load(args.reference)["features"]
    r = np.array(reference.astype(mx.float32), dtype=np.float64)
    for path in args.files:
        other = mx.load(path)["features"]
        x = np.array(other.astype(mx.float32), dtype=np.float64)
        entry = dict(file=path)
        if x.shape != r.shape:
            entry.update(error=f"shape {list(x.shape)} vs the reference's {list(r.shape)}")
        else:
            exact = other.dtype == reference.dtype and bool(mx.array_equal(other, reference).item())
            entry.update(relative_rmse=float(np.sqrt(np.mean((x - r) ** 2)) / np.sqrt(np.mean(r**2))),
                         max_abs_diff=float(np.max(np.abs(x - r))), exact=exact)
        print(json.dumps(entry), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("make")
    r = commands.add_parser("run")
    r.add_argument("--model", required=True)
    r.add_argument("--image", action="append", required=True)
    r.add_argument("--budget", type=int, required=True)
    r.add_argument("--dtype", choices=("bfloat16", "float32"), required=True)
    r.add_argument("--runs", type=int, default=3)
    r.add_argument("--save")
    p = commands.add_parser("pixels")
    p.add_argument("--model", required=True)
    p.add_argument("--image", required=True)
    p.add_argument("--budget", type=int, required=True)
    p.add_argument("--save", required=True)
    c = commands.add_parser("compare")
    c.add_argument("--reference", required=True)
    c.add_argument("files", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    select_device()
    actions = {"make": lambda: make(args.out), "run": lambda: run(args), "pixels": lambda: pixels(args),
               "compare": lambda: compare(args)}
    actions[args.command]()


if __name__ == "__main__":
    main()
