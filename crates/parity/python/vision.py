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

Quantized cases (`quant`) are written as published quants are: the reference model, with its
seeded weights, is quantized by MLX's own `nn.quantize` with a class predicate choosing the
modules (the projector alone as legacy converters did, or also the unified `patch_dense` and
the tower's clippable linears, with per-module overrides), and every parameter (language model
included) is saved with a `quantization` / `quantization_config` section in config.json. The
reference then loads that directory as `mlx_vlm.utils.load_model` does: the files it finds,
`Model.sanitize`, and its own `load_model_weights` (run from its source), which turns every
module whose `scales` are stored into an `nn.QuantizedLinear`. `compute="float32"` cases cast
the loaded reference with `model.set_dtype(mx.float32)` (floating parameters only) before
running; ours loads them with `--dtype f32` and the reference kernels.

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
from reference import (  # noqa: E402
    import_reference,
    install_transformers_shims,
    load_image,
    parse_args,
    reference_function,
)

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

# Quantized checkpoints. Tiny widths are multiples of 64 (128 where a group of 128 is used) so
# that every group size divides the inputs it quantizes.
TINY_Q_GEMMA4 = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=1, head_dim=32, use_clipped_linears=True, standardize=True,
                     patch_size=4, position_embedding_size=32)
TINY_Q_UNIFIED = dict(patch_size=8, pooling_kernel_size=2, model_patch_size=16, mm_embed_dim=64,
                      mm_posemb_size=32, output_proj_dims=64, num_soft_tokens=20)
# The unified model always has an audio embedder; a small one keeps the checkpoints small.
TINY_AUDIO = dict(model_type="gemma4_unified_audio", audio_embed_dim=64, hidden_size=64, output_proj_dims=64)
GEMMA4_RUNS = [dict(name="two-sizes", images=["gen:gradient-37x23.png", "gen:checker-20x30.png"], budget=6),
               dict(name="same-size", images=["gen:checker-20x30.png", "gen:noise-20x30.png"], budget=6)]
UNIFIED_RUNS = [dict(name="two-sizes", images=["gen:gradient-37x23.png", "gen:checker-20x30.png"], budget=12)]
TOWER = "tower"  # the tower's clippable linears (`vision_tower.encoder.layers.N.….linear`)
PROJECTOR = "embed_vision.embedding_projection"
PATCH_DENSE = "vision_embedder.patch_dense"
# Per-module overrides of the mixed case: other bits and groups, and another mode, per module.
MIXED = {
    "vision_tower.encoder.layers.0.self_attn.q_proj.linear": {"group_size": 32, "bits": 8},
    "vision_tower.encoder.layers.0.self_attn.k_proj.linear": {"group_size": 64, "bits": 2},
    "vision_tower.encoder.layers.0.self_attn.v_proj.linear": {"group_size": 32, "bits": 3},
    "vision_tower.encoder.layers.0.self_attn.o_proj.linear": {"group_size": 64, "bits": 5},
    "vision_tower.encoder.layers.0.mlp.gate_proj.linear": {"group_size": 32, "bits": 6},
    "vision_tower.encoder.layers.0.mlp.down_proj.linear": {"group_size": 128, "bits": 4},
    "vision_tower.encoder.layers.1.mlp.up_proj.linear": {"group_size": 32, "bits": 4, "mode": "mxfp4"},
    "vision_tower.encoder.layers.1.self_attn.o_proj.linear": {"bits": 8},
    PROJECTOR: {"group_size": 64, "bits": 8},
}


def q_case(name, model_type, quant, layout, compute=None, fixture=True, **vision):
    """A tiny quantized case; `fixture` puts it among the checked-in test fixtures."""
    gemma4 = model_type == "gemma4"
    return dict(name=name, model_type=model_type, dtype="bfloat16", text_hidden=64, layout=layout, tiny=True,
                fixture=fixture, vision=dict(TINY_Q_GEMMA4 if gemma4 else TINY_Q_UNIFIED, **vision), quant=quant,
                compute=compute, audio=None if gemma4 else TINY_AUDIO, runs=GEMMA4_RUNS if gemma4 else UNIFIED_RUNS)


def quant(mode, group_size, bits, modules, overrides=None):
    return dict(mode=mode, group_size=group_size, bits=bits, modules=modules, overrides=overrides or {})


CASES += [
    # gemma4: the legacy converters' layout (the projector alone, the language model quantized).
    q_case("q-legacy-affine4", "gemma4", quant("affine", 64, 4, [PROJECTOR]), "raw-sharded", num_hidden_layers=1),
    # Every vision linear but the patch embedder, with per-module bits, groups and modes.
    q_case("q-affine-mixed", "gemma4", quant("affine", 64, 4, [PROJECTOR, TOWER], MIXED), "sanitized",
           fixture=False),
    q_case("q-affine-mixed-f32", "gemma4", quant("affine", 64, 4, [PROJECTOR, TOWER], MIXED), "raw",
           compute="float32"),
    q_case("q-mxfp4", "gemma4", quant("mxfp4", 32, 4, [PROJECTOR, TOWER]), "raw", num_hidden_layers=1),
    q_case("q-nvfp4", "gemma4", quant("nvfp4", 16, 4, [PROJECTOR, TOWER]), "sanitized", num_hidden_layers=1),
    q_case("q-mxfp8", "gemma4", quant("mxfp8", 32, 8, [PROJECTOR, TOWER]), "raw-sharded", num_hidden_layers=1),
    q_case("q-mxfp8-f32", "gemma4", quant("mxfp8", 32, 8, [PROJECTOR, TOWER]), "sanitized", compute="float32",
           fixture=False),
    # gemma4_unified: patch_dense (with its bias) and the projector.
    q_case("q-unified-affine8", "gemma4_unified",
           quant("affine", 128, 8, [PATCH_DENSE, PROJECTOR], {PROJECTOR: {"group_size": 32, "bits": 3}}), "raw"),
    q_case("q-unified-affine8-f32", "gemma4_unified",
           quant("affine", 128, 8, [PATCH_DENSE, PROJECTOR], {PROJECTOR: {"group_size": 32, "bits": 3}}),
           "sanitized", compute="float32", fixture=False),
    q_case("q-unified-mxfp4", "gemma4_unified", quant("mxfp4", 32, 4, [PATCH_DENSE, PROJECTOR]), "sanitized"),
    q_case("q-unified-nvfp4", "gemma4_unified", quant("nvfp4", 16, 4, [PATCH_DENSE, PROJECTOR]), "raw-sharded",
           fixture=False),
    q_case("q-unified-nvfp4-f32", "gemma4_unified", quant("nvfp4", 16, 4, [PATCH_DENSE, PROJECTOR]), "raw",
           compute="float32"),
    q_case("q-unified-mxfp8", "gemma4_unified", quant("mxfp8", 32, 8, [PATCH_DENSE]), "raw"),
    # Real dimensions: e2b's widths with a 4-bit tower (4 of its 16 layers: MLX's CPU quantized
    # matmul is ~20x slower than its bf16 matmul) and projector; the 12B embedder quantized.
    dict(CASES[0], name="q-e2b-affine4", layout="raw-sharded", tiny=False,
         vision=dict(CASES[0]["vision"], num_hidden_layers=4), quant=quant("affine", 64, 4, [PROJECTOR, TOWER])),
    dict(CASES[2], name="q-unified-12b-affine4", layout="raw", tiny=False,
         quant=quant("affine", 64, 4, [PATCH_DENSE, PROJECTOR])),
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
    config = dict(model_type=case["model_type"], vision_config=vision, text_config=text)
    if case.get("audio"):
        config["audio_config"] = dict(case["audio"])
    if case.get("quant"):
        q = case["quant"]
        section = dict(group_size=q["group_size"], bits=q["bits"], mode=q["mode"], **q["overrides"])
        # mlx-vlm's converter writes the same section under both names.
        config["quantization"] = section
        config["quantization_config"] = dict(section)
    return config


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


def raw_name(key):
    """The Hugging Face name of a sanitized key (the inverse of `Model.sanitize`'s renaming)."""
    if key.startswith("language_model.model."):
        return "model.language_model." + key[len("language_model.model."):]
    return "model." + key


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
    names = {(raw_name(k) if layout.startswith("raw") else k): v for k, v in weights.items()}
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


def writer_predicate(case):
    """The class predicate a converter quantizes with: the case's vision modules (overrides as
    per-module parameters), never the patch embedder, and the language model's linears whose
    input width the group divides."""
    q = case["quant"]

    def chosen(path):
        if path in q["modules"]:
            return True
        return TOWER in q["modules"] and path.startswith("vision_tower.encoder.layers.") and path.endswith(".linear")

    def predicate(path, module):
        if not isinstance(module, nn.Linear):
            return False
        if path.startswith(("vision_tower.", "embed_vision.", "vision_embedder.")):
            if not chosen(path):
                return False
            return dict(q["overrides"][path]) if path in q["overrides"] else True
        return (path.startswith("language_model.") and module.weight.shape[-1] % q["group_size"] == 0
                and module.weight.size % 64 == 0)

    return predicate


def write_quantized_checkpoint(case, config, directory, seed):
    """The reference model with seeded vision weights, quantized by `nn.quantize`, every
    parameter saved in the case's layout."""
    mx.random.seed(seed)
    model = build_reference_model(config)
    weights = random_weights(vision_parameters(model), case["dtype"], seed)
    model.load_weights(list(weights.items()), strict=False)
    model.set_dtype(getattr(mx, case["dtype"]))
    q = case["quant"]
    nn.quantize(model, group_size=q["group_size"], bits=q["bits"], mode=q["mode"],
                class_predicate=writer_predicate(case))
    params = dict(tree_flatten(model.parameters()))
    mx.eval(list(params.values()))
    save_checkpoint(directory, config, params, case["layout"], case["runs"][0]["budget"])


def _reference_loader():
    """mlx-vlm's `utils.load_model_weights`, run from its source with the helpers it calls."""
    from pathlib import Path
    from typing import Optional

    from mlx.utils import tree_map

    one_bit = import_reference("quantization.one_bit")
    nvfp4 = import_reference("quantization.nvfp4")
    scope = dict(mx=mx, nn=nn, logging=__import__("logging"), Optional=Optional, Path=Path, tree_flatten=tree_flatten,
                 tree_map=tree_map, Dict=dict, Tuple=tuple,
                 replace_one_bit_modules=one_bit.replace_one_bit_modules,
                 _quantization_for_path=one_bit._quantization_for_path,
                 replace_scaled_quantized_linears=nvfp4.replace_scaled_quantized_linears)
    for name in ("skip_multimodal_module", "_has_quantized_weights", "_quantization_path_aliases",
                 "_quantization_for_module_path", "_drop_modules_without_weights", "load_model_weights"):
        scope[name] = reference_function("utils", name, scope)
    return scope["load_model_weights"]


def find_weight_files(directory):
    """`load_model`'s choice of files: the index's existing shards, else every *.safetensors but
    consolidated.safetensors."""
    import glob

    index = os.path.join(directory, "model.safetensors.index.json")
    files = []
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f).get("weight_map", {})
        files = [os.path.join(directory, s) for s in sorted(set(weight_map.values()))
                 if os.path.exists(os.path.join(directory, s))]
    if not files:
        files = [f for f in glob.glob(os.path.join(directory, "*.safetensors"))
                 if not f.endswith("consolidated.safetensors")]
    return files


def load_quantized_reference(model, directory):
    """The reference's loading path for a published quant: the files `load_model` finds,
    Model.sanitize, then `load_model_weights` (nn.quantize by the checkpoint's scales, strict
    load_weights)."""
    from pathlib import Path

    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    weights = {}
    for file in find_weight_files(directory):
        weights.update(mx.load(file))
    weights = model.sanitize(weights)
    _reference_loader()(model, config, weights, Path(directory))
    quantized = sorted(p for p, m in model.named_modules() if isinstance(m, nn.QuantizedLinear)
                       and p.startswith(("vision_tower.", "embed_vision.", "vision_embedder.")))
    if not quantized:
        raise RuntimeError("the reference quantized no vision module")
    return quantized


# ---------------------------------------------------------------------------------------------
# Stage capture


class Capture:
    """Records stage outputs of the reference modules while a run executes: a stage computed
    again (the next batch, or the next image of a list of differently sized images, which the
    reference encodes one by one) is recorded again as "<stage>#<k>", k counting from 1."""

    def __init__(self):
        self.stages = {}
        self.block = 0
        self.active = False

    def put(self, name, value):
        if self.active:
            key, k = name, 1
            while key in self.stages:
                key, k = f"{name}#{k}", k + 1
            self.stages[key] = value

    def install_gemma4(self):
        capture = self
        embedder = gemma4_vision.VisionPatchEmbedder
        block = gemma4_vision.VisionTransformerBlock
        pooler = gemma4_vision.VisionPooler
        original = (embedder.__call__, embedder.embed_patches, block.__call__, pooler.__call__)

        def embed_call(self, *args, **kwargs):
            out = original[0](self, *args, **kwargs)
            capture.put("patch_embeddings", out)
            capture.block = 0
            return out

        def embed_patches(self, *args, **kwargs):
            out = original[1](self, *args, **kwargs)
            capture.put("patch_embeddings", out)
            capture.block = 0
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
    capture.active = False
    stages = dict(capture.stages)
    for key in [k for k in stages if k.split("#")[0] == "vision_tower"]:
        tower = stages.pop(key)
        if standardize:
            stages[key.replace("vision_tower", "standardized")] = tower.reshape(-1, tower.shape[-1])
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
    quantized = None
    if case.get("quant"):
        write_quantized_checkpoint(case, config, model_dir, seed)
        model = build_reference_model(config)
        quantized = load_quantized_reference(model, model_dir)
    else:
        model = build_reference_model(config)
        weights = random_weights(vision_parameters(model), case["dtype"], seed)
        save_checkpoint(model_dir, config, weights, case["layout"], case["runs"][0]["budget"])
        load_reference(model, model_dir)
    if case.get("compute") == "float32":
        # A user casting the model: floating parameters only (packed weights and uint8 scales stay).
        model.set_dtype(mx.float32)

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
    if quantized:
        print(f"  {case['name']}: {len(quantized)} quantized vision modules", flush=True)
    return dict(name=case["name"], model_type=case["model_type"], dtype=case["dtype"], runs=runs,
                compute=case.get("compute"), quantized=quantized)


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
    if args.fixtures:
        cases = [c for c in cases if c.get("fixture", True)]
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c["name"] in wanted]
    manifest = []
    for i, case in enumerate(cases):
        print(f"reference: {case['name']}", flush=True)
        # Quantized cases keep their seed whichever subset runs (their index in CASES).
        seed = 5000 + CASES.index(case) if case.get("quant") else 1234 + i
        manifest.append(run_case(case, out, seed=seed))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(dict(cases=manifest), f, indent=1)


if __name__ == "__main__":
    main()
