"""Reference side of `cargo xtask parity vision`: both encoders, every stage, from image files.

For each case this writes, under --out/<case>/:
- model/: a checkpoint in the published layout (config.json, processor_config.json, weights
  under raw Hugging Face names or sanitized ones, one file or shards with an index), seeded
  random weights;
- images/: the input files (sample photographs shipped by scikit-image, generated images);
- reference.safetensors: for each run, every stage mlx-vlm computes, named "<run>.<stage>";
and a manifest.json at --out listing cases, runs, images, budgets and stages.

The reference runs end to end: mlx_vlm.utils.load_image → the reference image processor
(Gemma4ImageProcessor / Gemma4UnifiedImageProcessor, run unchanged with tiny stand-ins for
Hugging Face utilities) → Model.sanitize → Model.load_weights → Model.encode_image (gemma4) or
Model.get_image_features (gemma4_unified). Stages are captured by wrapping the reference's own
modules (patch embedder, each transformer block, the pooler, the vision tower; the unified
embedder's layer norms and projection), so every captured array is what mlx-vlm computed.

--quick runs only the tiny configurations (seconds); --fixtures DIR writes the tiny cases
into DIR instead (the checked-in test fixtures of crates/vision/tests).
"""

import json
import math
import os
import shutil
import sys

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx.utils import tree_flatten
from PIL import Image

sys.path.insert(0, os.path.dirname(__file__))
from reference import import_reference, install_transformers_shims, load_image, parse_args  # noqa: E402

install_transformers_shims()
gemma4 = import_reference("models.gemma4.gemma4")
gemma4_config = import_reference("models.gemma4.config")
gemma4_vision = import_reference("models.gemma4.vision")
gemma4_processing = import_reference("models.gemma4.processing_gemma4")
unified = import_reference("models.gemma4_unified.gemma4_unified")
unified_config = import_reference("models.gemma4_unified.config")
unified_processing = import_reference("models.gemma4_unified.processing_gemma4_unified")

SKIMAGE_DATA = os.path.join(os.path.dirname(np.__file__), "..", "skimage", "data")

# Text configs only need a width; everything else is kept tiny so building the reference
# Model does not allocate a language model.
TINY_TEXT = dict(num_hidden_layers=1, intermediate_size=32, num_attention_heads=1, num_key_value_heads=1,
                 head_dim=32, global_head_dim=32, vocab_size=16, vocab_size_per_layer_input=16,
                 hidden_size_per_layer_input=0, num_kv_shared_layers=0, sliding_window_pattern=1,
                 num_global_key_value_heads=1, enable_moe_block=False)

CASES = [
    # The real e2b vision dimensions, at a small soft-token budget so bf16 runs in minutes.
    dict(name="e2b", model_type="gemma4", dtype="bfloat16", text_hidden=1536, layout="raw-sharded",
         vision=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=16, num_attention_heads=12,
                     num_key_value_heads=12, head_dim=64, use_clipped_linears=True, standardize=False),
         runs=[dict(name="rocket", images=["rocket.jpg"], budget=70)]),
    # 26B-A4B / 31B shapes (1152 wide, head_dim 72 → SDPA padded to 80, standardize), few layers.
    dict(name="31b-shaped", model_type="gemma4", dtype="bfloat16", text_hidden=5376, layout="raw",
         vision=dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=3, num_attention_heads=16,
                     num_key_value_heads=16, head_dim=72, use_clipped_linears=False, standardize=True),
         runs=[dict(name="chelsea", images=["chelsea.png"], budget=70),
               dict(name="wide-strip", images=["gen:strip-1x40.png"], budget=70)]),
    # The unified embedder at its 12B dimensions (6912 → 3840).
    dict(name="unified-12b", model_type="gemma4_unified", dtype="bfloat16", text_hidden=3840, layout="sanitized",
         vision=dict(), runs=[dict(name="astronaut+coffee", images=["astronaut.png", "coffee.png"], budget=280)]),
] + [
    # Tiny configurations: every path in seconds (also the checked-in test fixtures).
    dict(name="tiny-clipped", model_type="gemma4", dtype="bfloat16", text_hidden=48, layout="raw", tiny=True,
         vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=8, use_clipped_linears=True, standardize=True,
                     patch_size=4, position_embedding_size=32, rms_norm_eps=1e-5),
         runs=[dict(name="one", images=["gen:gradient-37x23.png"], budget=6),
               dict(name="two-sizes", images=["gen:gradient-37x23.png", "gen:checker-20x30.png"], budget=6),
               dict(name="same-size", images=["gen:checker-20x30.png", "gen:noise-20x30.png"], budget=6),
               dict(name="padded", images=["gen:noise-20x30.png"], budget=6, padded=9 * 8)]),
    dict(name="tiny-f32", model_type="gemma4", dtype="float32", text_hidden=24, layout="sanitized", tiny=True,
         vision=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=2, head_dim=8, use_clipped_linears=False, standardize=False,
                     patch_size=4, position_embedding_size=16),
         runs=[dict(name="one", images=["gen:gradient-37x23.png"], budget=4)]),
    dict(name="tiny-unified", model_type="gemma4_unified", dtype="bfloat16", text_hidden=24, layout="raw",
         tiny=True, vision=dict(patch_size=2, pooling_kernel_size=2, model_patch_size=4, mm_embed_dim=16,
                                mm_posemb_size=32, output_proj_dims=16, num_soft_tokens=20),
         runs=[dict(name="two-sizes", images=["gen:gradient-37x23.png", "gen:checker-20x30.png"], budget=20)]),
]


# ---------------------------------------------------------------------------------------------
# Inputs


def generated_image(spec, path):
    """Writes a generated test image: "<kind>-<W>x<H>.png"."""
    kind, size = spec.split("-", 1)
    width, height = (int(v) for v in size.split(".")[0].split("x"))
    y, x = np.mgrid[0:height, 0:width]
    if kind == "gradient":
        rgb = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), (x + y) * 7 % 256], -1)
    elif kind == "checker":
        rgb = np.stack([((x // 3 + y // 3) % 2) * 255, (x * 13) % 256, (y * 29) % 256], -1)
    elif kind == "strip":
        rgb = np.stack([(x * 3) % 256, np.full_like(x, 128), (x * 11 + 5) % 256], -1)
    else:
        rgb = np.random.default_rng(sum(map(ord, spec))).integers(0, 256, (height, width, 3))
    Image.fromarray(rgb.astype(np.uint8), "RGB").save(path)


def materialize_images(names, directory):
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name in names:
        if name.startswith("gen:"):
            path = os.path.join(directory, name[4:])
            if not os.path.exists(path):
                generated_image(name[4:], path)
        else:
            path = os.path.join(directory, name)
            if not os.path.exists(path):
                shutil.copyfile(os.path.join(SKIMAGE_DATA, name), path)
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------
# Checkpoints


def model_config(case):
    vision = dict(case["vision"])
    vision["model_type"] = "gemma4_vision" if case["model_type"] == "gemma4" else "gemma4_unified_vision"
    text = dict(TINY_TEXT, hidden_size=case["text_hidden"])
    return dict(model_type=case["model_type"], vision_config=vision, text_config=text)


def build_reference_model(config):
    if config["model_type"] == "gemma4":
        cfg = gemma4_config.ModelConfig.from_dict(config)
        cfg.vision_config = gemma4_config.VisionConfig.from_dict(config["vision_config"])
        cfg.text_config = gemma4_config.TextConfig.from_dict(config["text_config"])
        return gemma4.Model(cfg)
    cfg = unified_config.ModelConfig.from_dict(config)
    cfg.vision_config = unified_config.VisionConfig.from_dict(config["vision_config"])
    cfg.text_config = unified_config.TextConfig.from_dict(config["text_config"])
    return unified.Model(cfg)


def vision_parameters(model):
    """The vision parameters of a reference model, by sanitized name."""
    prefixes = ("vision_tower.", "embed_vision.", "vision_embedder.")
    return {k: v for k, v in tree_flatten(model.parameters()) if k.startswith(prefixes)}


def random_weights(params, dtype, seed):
    """Seeded random values with the reference parameters' names and shapes."""
    key = mx.random.key(seed)
    weights = {}
    for i, (name, value) in enumerate(sorted(params.items())):
        k = mx.random.fold_in(key, i) if hasattr(mx.random, "fold_in") else mx.random.split(key, i + 2)[i + 1]
        leaf = name.rsplit(".", 1)[-1]
        shape = value.shape
        if leaf in ("input_min", "output_min"):
            w = mx.array(-1.5 - float(mx.random.uniform(key=k)))
        elif leaf in ("input_max", "output_max"):
            w = mx.array(1.5 + float(mx.random.uniform(key=k)))
        elif "norm" in name.split(".")[-2] or "_ln" in name or name.endswith("std_scale"):
            if leaf == "bias":
                w = 0.1 * mx.random.normal(shape, key=k)
            else:
                w = 1.0 + 0.25 * mx.random.normal(shape, key=k)
        elif leaf == "bias" or name.endswith("std_bias"):
            w = 0.1 * mx.random.normal(shape, key=k)
        elif "position_embedding_table" in name or "pos_embedding" in name:
            w = 0.5 * mx.random.normal(shape, key=k)
        else:
            w = mx.random.normal(shape, key=k) / math.sqrt(shape[-1])
        weights[name] = w.astype(getattr(mx, dtype))
    return weights


def save_checkpoint(directory, config, weights, layout, budget):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    vision = config["vision_config"]
    processor = dict(image_processor=dict(
        image_processor_type="Gemma4ImageProcessor", do_rescale=True, rescale_factor=1 / 255, do_normalize=False,
        image_mean=[0.0, 0.0, 0.0], image_std=[1.0, 1.0, 1.0], patch_size=vision.get("patch_size", 16),
        pooling_kernel_size=vision.get("pooling_kernel_size", 3), max_soft_tokens=budget))
    with open(os.path.join(directory, "processor_config.json"), "w") as f:
        json.dump(processor, f, indent=1)
    names = {("model." + k if layout.startswith("raw") else k): v for k, v in weights.items()}
    if layout.endswith("sharded"):
        keys = sorted(names)
        half = len(keys) // 2
        shards = {"model-00001-of-00002.safetensors": keys[:half], "model-00002-of-00002.safetensors": keys[half:]}
        weight_map = {}
        for shard, shard_keys in shards.items():
            mx.save_safetensors(os.path.join(directory, shard), {k: names[k] for k in shard_keys})
            weight_map.update({k: shard for k in shard_keys})
        with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
            json.dump(dict(metadata=dict(), weight_map=weight_map), f, indent=1)
    else:
        mx.save_safetensors(os.path.join(directory, "model.safetensors"), names)


def load_reference(model, directory):
    """The reference's loading path: read the files, Model.sanitize, load_weights."""
    index = os.path.join(directory, "model.safetensors.index.json")
    weights = {}
    if os.path.exists(index):
        with open(index) as f:
            for shard in sorted(set(json.load(f)["weight_map"].values())):
                weights.update(mx.load(os.path.join(directory, shard)))
    else:
        weights.update(mx.load(os.path.join(directory, "model.safetensors")))
    weights = model.sanitize(weights)
    model.load_weights(list(weights.items()), strict=False)
    loaded = vision_parameters(model)
    missing = sorted(set(loaded) - set(weights))
    if missing:
        raise RuntimeError(f"reference did not load {missing[:5]}")
    mx.eval(model.parameters())


# ---------------------------------------------------------------------------------------------
# Stage capture


class Capture:
    """Records stage outputs of the reference modules while a run executes."""

    def __init__(self):
        self.stages = {}
        self.block = 0
        self.active = False

    def put(self, name, value):
        if self.active:
            self.stages[name] = value

    def install_gemma4(self):
        capture = self
        embedder = gemma4_vision.VisionPatchEmbedder
        block = gemma4_vision.VisionTransformerBlock
        pooler = gemma4_vision.VisionPooler
        original = (embedder.__call__, embedder.embed_patches, block.__call__, pooler.__call__)

        def embed_call(self, *args, **kwargs):
            out = original[0](self, *args, **kwargs)
            capture.put("patch_embeddings", out)
            return out

        def embed_patches(self, *args, **kwargs):
            out = original[1](self, *args, **kwargs)
            capture.put("patch_embeddings", out)
            return out

        def block_call(self, *args, **kwargs):
            out = original[2](self, *args, **kwargs)
            capture.put(f"block_{capture.block:02d}", out)
            capture.block += 1
            return out

        def pooler_call(self, *args, **kwargs):
            out = original[3](self, *args, **kwargs)
            capture.put("pooled", out[0])
            return out

        embedder.__call__, embedder.embed_patches = embed_call, embed_patches
        block.__call__, pooler.__call__ = block_call, pooler_call


class Recorder(nn.Module):
    """Wraps a reference submodule; records its input and/or output under stage names."""

    def __init__(self, inner, capture, output_name=None, input_name=None):
        super().__init__()
        self.inner = inner
        self._capture = capture
        self._names = (input_name, output_name)

    def __call__(self, *args, **kwargs):
        if self._names[0]:
            self._capture.put(self._names[0], args[0])
        out = self.inner(*args, **kwargs)
        if self._names[1]:
            self._capture.put(self._names[1], out)
        return out


# ---------------------------------------------------------------------------------------------
# Runs


def run_gemma4(model, processor, paths, run, capture, standardize):
    images = [load_image(p) for p in paths]
    if run.get("padded"):
        data, _ = processor.preprocess(images, max_soft_tokens=run["budget"])
        pixels = data["pixel_values"]
        patches, positions = gemma4_processing._convert_video_to_patches(pixels, processor.patch_size)
        patches, positions = gemma4_processing._pad_video_patches(patches, positions, run["padded"])
        capture.active = True
        features = model.encode_image(mx.array(patches), mx.array(positions))
    else:
        data, _ = processor.preprocess(images, max_soft_tokens=run["budget"])
        pixels = data["pixel_values"]
        one_batch = isinstance(pixels, np.ndarray)
        pixels = mx.array(pixels) if one_batch else [mx.array(p) for p in pixels]
        capture.active = True
        features = model.encode_image(pixels)
        if not one_batch:
            # Images of different sizes run one by one inside the reference, so only the final
            # features are one array to compare.
            capture.stages = {}
    capture.active = False
    stages = dict(capture.stages)
    tower = stages.pop("vision_tower", None)
    if standardize and tower is not None:
        stages["standardized"] = tower.reshape(-1, tower.shape[-1])
    stages["features"] = features.reshape(-1, features.shape[-1])
    return stages


def run_unified(model, processor, paths, run, capture):
    images = [load_image(p) for p in paths]
    data = processor.preprocess(images, max_soft_tokens=run["budget"])
    data = data[0] if isinstance(data, tuple) else data
    capture.active = True
    features = model.get_image_features(mx.array(data["pixel_values"]), mx.array(data["image_position_ids"]))
    capture.active = False
    stages = dict(capture.stages)
    stages["features"] = features
    return stages


def run_case(case, out, seed):
    case_dir = os.path.join(out, case["name"])
    model_dir = os.path.join(case_dir, "model")
    config = model_config(case)
    model = build_reference_model(config)
    weights = random_weights(vision_parameters(model), case["dtype"], seed)
    save_checkpoint(model_dir, config, weights, case["layout"], case["runs"][0]["budget"])
    load_reference(model, model_dir)

    capture = Capture()
    if case["model_type"] == "gemma4":
        capture.install_gemma4()
        standardize = case["vision"].get("standardize", False)
        if standardize:
            model.vision_tower = Recorder(model.vision_tower, capture, output_name="vision_tower")
        v = case["vision"]
        processor = gemma4_processing.Gemma4ImageProcessor(patch_size=v.get("patch_size", 16),
                                                           pooling_kernel_size=v.get("pooling_kernel_size", 3))
    else:
        emb = model.vision_embedder
        for name in ("patch_ln1", "patch_dense", "patch_ln2"):
            setattr(emb, name, Recorder(getattr(emb, name), capture, output_name=name))
        emb.pos_norm = Recorder(emb.pos_norm, capture, output_name="pos_norm", input_name="positions_added")
        v = case["vision"]
        processor = unified_processing.Gemma4UnifiedImageProcessor(patch_size=v.get("patch_size", 16),
                                                                   pooling_kernel_size=v.get("pooling_kernel_size", 3))

    tensors, runs = {}, []
    for run in case["runs"]:
        paths = materialize_images(run["images"], os.path.join(case_dir, "images"))
        capture.stages, capture.block = {}, 0
        if case["model_type"] == "gemma4":
            stages = run_gemma4(model, processor, paths, run, capture, standardize)
        else:
            stages = run_unified(model, processor, paths, run, capture)
        mx.eval(list(stages.values()))
        for stage, value in stages.items():
            tensors[f"{run['name']}.{stage}"] = value
        runs.append(dict(name=run["name"], images=[os.path.relpath(p, case_dir) for p in paths],
                         budget=run["budget"], padded=run.get("padded"), stages=list(stages)))
        print(f"  {case['name']}/{run['name']}: {len(stages)} stages, features {tuple(stages['features'].shape)}",
              flush=True)
    mx.save_safetensors(os.path.join(case_dir, "reference.safetensors"), tensors)
    return dict(name=case["name"], model_type=case["model_type"], dtype=case["dtype"], runs=runs)


def main():
    def extra(parser):
        parser.add_argument("--quick", action="store_true", help="tiny configurations only")
        parser.add_argument("--fixtures", help="write the tiny cases into this directory instead")
        parser.add_argument("--cases", help="comma-separated case names")

    args = parse_args("gemma4 / gemma4_unified vision parity, reference side", extra)
    out = args.fixtures or args.out
    cases = CASES
    if args.quick or args.fixtures:
        cases = [c for c in cases if c.get("tiny")]
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c["name"] in wanted]
    manifest = []
    for i, case in enumerate(cases):
        print(f"reference: {case['name']}", flush=True)
        manifest.append(run_case(case, out, seed=1234 + i))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(dict(cases=manifest), f, indent=1)


if __name__ == "__main__":
    main()
