"""Checkpoints for the parity and bench cases, written and loaded as the reference does.

A case (see vision.py's CASES) becomes a published-layout directory: config.json,
processor_config.json and seeded random weights under raw Hugging Face names or sanitized ones,
in one file or shards with an index; quantized cases are quantized by MLX's own `nn.quantize`.
The loaders are the reference's paths: `Model.sanitize` + `load_weights`, or for quants
mlx-vlm's own `load_model_weights`.
"""

import glob
import json
import math
import os
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from mlx_vlm.models.gemma4 import config as gemma4_config
from mlx_vlm.models.gemma4 import gemma4
from mlx_vlm.models.gemma4_unified import config as unified_config
from mlx_vlm.models.gemma4_unified import gemma4_unified as unified
from mlx_vlm.utils import load_model_weights
from mlx_vlm.quantization.one_bit import OneBitLinear

# Text configs only need a width; everything else is kept tiny so building the reference
# Model does not allocate a language model.
TINY_TEXT = dict(num_hidden_layers=1, intermediate_size=32, num_attention_heads=1, num_key_value_heads=1,
                 head_dim=32, global_head_dim=32, vocab_size=16, vocab_size_per_layer_input=16,
                 hidden_size_per_layer_input=0, num_kv_shared_layers=0, sliding_window_pattern=1,
                 num_global_key_value_heads=1, enable_moe_block=False)

TOWER = "tower"  # the tower's clippable linears (`vision_tower.encoder.layers.N.….linear`)


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


def save_checkpoint(directory, config, weights, layout, budget, video=None):
    """Writes config.json, processor_config.json (the image processor at `budget`; with
    `video`, the video processor's keyword arguments as its "video_processor" section) and the
    weights in `layout`."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    vision = config["vision_config"]
    processor = dict(image_processor=dict(
        image_processor_type="Gemma4ImageProcessor", do_rescale=True, rescale_factor=1 / 255, do_normalize=False,
        image_mean=[0.0, 0.0, 0.0], image_std=[1.0, 1.0, 1.0], patch_size=vision.get("patch_size", 16),
        pooling_kernel_size=vision.get("pooling_kernel_size", 3), max_soft_tokens=budget))
    if video is not None:
        processor["video_processor"] = dict(video)
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


def write_quantized_checkpoint(case, config, directory, seed, weights=None, budget=None):
    """The reference model with seeded vision weights (or `weights`, by sanitized name),
    quantized by `nn.quantize`, every parameter saved in the case's layout with a processor
    config for `budget` (default: the case's first run's)."""
    mx.random.seed(seed)
    model = build_reference_model(config)
    if weights is None:
        weights = random_weights(vision_parameters(model), case["dtype"], seed)
    model.load_weights(list(weights.items()), strict=False)
    model.set_dtype(getattr(mx, case["dtype"]))
    q = case["quant"]
    nn.quantize(model, group_size=q["group_size"], bits=q["bits"], mode=q["mode"],
                class_predicate=writer_predicate(case))
    params = dict(tree_flatten(model.parameters()))
    mx.eval(list(params.values()))
    save_checkpoint(directory, config, params, case["layout"], budget or case["runs"][0]["budget"])


def find_weight_files(directory):
    """`load_model`'s choice of files: the index's existing shards, else every *.safetensors but
    consolidated.safetensors."""
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
    Model.sanitize, then `load_model_weights` (1-bit modules as OneBitLinear, the others by
    nn.quantize from the checkpoint's scales, strict load_weights)."""
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    weights = {}
    for file in find_weight_files(directory):
        weights.update(mx.load(file))
    weights = model.sanitize(weights)
    load_model_weights(model, config, weights, Path(directory))
    quantized = sorted(p for p, m in model.named_modules() if isinstance(m, (nn.QuantizedLinear, OneBitLinear))
                       and p.startswith(("vision_tower.", "embed_vision.", "vision_embedder.")))
    if not quantized:
        raise RuntimeError("the reference quantized no vision module")
    return quantized
