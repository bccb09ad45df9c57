"""Reference side of `cargo xtask parity vision`: both encoders, every stage, from image files.

For each case this writes, under --out/<case>/:
- model/: a checkpoint in the published layout (config.json, processor_config.json, weights
  under raw Hugging Face names or sanitized ones, one file or shards with an index), seeded
  random weights;
- images/: the input files (sample photographs shipped by scikit-image, generated images);
- reference.safetensors: for each run, every stage mlx-vlm computes, named "<run>.<stage>" (a
  `video` run's images are the frames of one video, through the family's video processor and
  video path);
and a manifest.json at --out listing cases, runs, images, budgets and stages.

The reference runs end to end: mlx_vlm.utils.load_image → the reference image processor
(Gemma4ImageProcessor / Gemma4UnifiedImageProcessor) → Model.sanitize → Model.load_weights → Model.encode_image (gemma4) or
Model.get_image_features (gemma4_unified). Stages are captured by wrapping the reference's own
modules (patch embedder, each transformer block, the pooler, the vision tower; the unified
embedder's layer norms and projection), so every captured array is what mlx-vlm computed.

Quantized cases (`quant`) are written as published quants are: the reference model, with its
seeded weights, is quantized by MLX's own `nn.quantize` with a class predicate choosing the
modules (the projector alone as legacy converters did, or also the unified `patch_dense` and
the tower's clippable linears, with per-module overrides), and every parameter (language model
included) is saved with a `quantization` / `quantization_config` section in config.json. The
reference then loads that directory as `mlx_vlm.utils.load_model` does: the files it finds,
`Model.sanitize`, and its own `load_model_weights`, which turns every
module whose `scales` are stored into an `nn.QuantizedLinear`. `compute="float32"` cases cast
the loaded reference with `model.set_dtype(mx.float32)` (floating parameters only) before
running; ours loads them with `--dtype f32` and the reference kernels.

Checkpoints are written and loaded by checkpoints.py, input images by images.py.

--quick runs only the tiny configurations (seconds); --fixtures DIR writes the tiny cases
into DIR instead (the checked-in test fixtures of crates/vision/tests).
"""

import json
import os
import shutil
import sys

import mlx.core as mx
import mlx.nn as nn
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from checkpoints import (  # noqa: E402
    TOWER,
    build_reference_model,
    load_quantized_reference,
    load_reference,
    model_config,
    random_weights,
    save_checkpoint,
    vision_parameters,
    write_quantized_checkpoint,
)
from mlx_vlm.models.gemma4 import processing_gemma4 as gemma4_processing  # noqa: E402
from mlx_vlm.models.gemma4 import vision as gemma4_vision  # noqa: E402
from mlx_vlm.models.gemma4_unified import processing_gemma4_unified as unified_processing  # noqa: E402
from mlx_vlm.utils import load_image  # noqa: E402
from images import materialize_images  # noqa: E402
from reference import ReferenceCache, link, parse_args  # noqa: E402

# The frames of the tiny cases' video (one size; the case keeps 2 of the 3, sampled as
# mlx-vlm samples a longer video).
VIDEO_FRAMES = ["gen:gradient-37x23.png", "gen:checker-37x23.png", "gen:noise-37x23.png"]

CASES = [
    # The real e2b vision dimensions, at a small soft-token budget so bf16 runs in minutes.
    dict(name="e2b", model_type="gemma4", dtype="bfloat16", text_hidden=1536, layout="raw-sharded",
         vision=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=16, num_attention_heads=12,
                     num_key_value_heads=12, head_dim=64, use_clipped_linears=True, standardize=False),
         runs=[dict(name="rocket", images=["rocket.jpg"], budget=70),
               dict(name="video", images=["gen:gradient-640x480.png", "gen:checker-640x480.png"], budget=70,
                    video=True)]),
    # 26B-A4B / 31B shapes (1152 wide, head_dim 72 → SDPA padded to 80, standardize), few layers.
    dict(name="31b-shaped", model_type="gemma4", dtype="bfloat16", text_hidden=5376, layout="raw",
         vision=dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=3, num_attention_heads=16,
                     num_key_value_heads=16, head_dim=72, use_clipped_linears=False, standardize=True),
         runs=[dict(name="chelsea", images=["chelsea.png"], budget=70),
               dict(name="wide-strip", images=["gen:strip-1x40.png"], budget=70)]),
    # The unified embedder at its 12B dimensions (6912 → 3840).
    dict(name="unified-12b", model_type="gemma4_unified", dtype="bfloat16", text_hidden=3840, layout="sanitized",
         vision=dict(), runs=[dict(name="astronaut+coffee", images=["astronaut.png", "coffee.png"], budget=280),
                              dict(name="video", images=["gen:gradient-640x480.png", "gen:checker-640x480.png"],
                                   budget=70, video=True)]),
] + [
    # Tiny configurations: every path in seconds (also the checked-in test fixtures).
    dict(name="tiny-clipped", model_type="gemma4", dtype="bfloat16", text_hidden=48, layout="raw", tiny=True,
         vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=8, use_clipped_linears=True, standardize=True,
                     patch_size=4, position_embedding_size=32, rms_norm_eps=1e-5),
         runs=[dict(name="one", images=["gen:gradient-37x23.png"], budget=6),
               dict(name="two-sizes", images=["gen:gradient-37x23.png", "gen:checker-20x30.png"], budget=6),
               dict(name="same-size", images=["gen:checker-20x30.png", "gen:noise-20x30.png"], budget=6),
               dict(name="padded", images=["gen:noise-20x30.png"], budget=6, padded=9 * 8),
               dict(name="video", images=VIDEO_FRAMES, budget=70, video=True)],
         video=dict(num_frames=2)),
    dict(name="tiny-f32", model_type="gemma4", dtype="float32", text_hidden=24, layout="sanitized", tiny=True,
         vision=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=2, head_dim=8, use_clipped_linears=False, standardize=False,
                     patch_size=4, position_embedding_size=16),
         runs=[dict(name="one", images=["gen:gradient-37x23.png"], budget=4)]),
    dict(name="tiny-unified", model_type="gemma4_unified", dtype="bfloat16", text_hidden=24, layout="raw",
         tiny=True, vision=dict(patch_size=2, pooling_kernel_size=2, model_patch_size=4, mm_embed_dim=16,
                                mm_posemb_size=32, output_proj_dims=16, num_soft_tokens=20),
         runs=[dict(name="two-sizes", images=["gen:gradient-37x23.png", "gen:checker-20x30.png"], budget=20),
               dict(name="video", images=VIDEO_FRAMES, budget=70, video=True)],
         video=dict(num_frames=2)),
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
    dict(CASES[0], name="q-e2b-affine4", layout="raw-sharded", tiny=False, runs=CASES[0]["runs"][:1],
         vision=dict(CASES[0]["vision"], num_hidden_layers=4), quant=quant("affine", 64, 4, [PROJECTOR, TOWER])),
    dict(CASES[2], name="q-unified-12b-affine4", layout="raw", tiny=False, runs=CASES[2]["runs"][:1],
         quant=quant("affine", 64, 4, [PATCH_DENSE, PROJECTOR])),
]

CASES += [
    # 1-bit affine (MLX 0.32.4's `quantize` makes it): mlx-vlm loads these modules as its own
    # OneBitLinear (a dequantized weight and a matmul), not nn.QuantizedLinear, so their rows name
    # the GEMM (the q-* cases name the quantized kernel).
    q_case("onebit", "gemma4", quant("affine", 64, 1, [PROJECTOR, TOWER], {PROJECTOR: {"group_size": 32, "bits": 1}}),
           "raw", fixture=False),
    q_case("unified-onebit", "gemma4_unified", quant("affine", 64, 1, [PATCH_DENSE, PROJECTOR]), "sanitized",
           fixture=False),
]


# Long sequences: the largest budget, 1120 soft tokens (an image of 10,080 patches, attention over 10,080
# keys), for an image and for a video at its largest per-frame budget, on a tower narrow enough
# that stock MLX's CPU attention finishes in minutes; bf16, and the same weights cast to float32.
LONG_1120 = dict(name="long-1120", model_type="gemma4", dtype="bfloat16", text_hidden=64, layout="raw",
                 vision=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
                             num_key_value_heads=2, head_dim=32, use_clipped_linears=True, standardize=False),
                 runs=[dict(name="photo", images=["gen:gradient-1680x1536.png"], budget=1120),
                       dict(name="video", images=["gen:checker-1680x1536.png", "gen:noise-1680x1536.png"],
                            budget=1120, video=True)],
                 video=dict(num_frames=2))
CASES += [LONG_1120, dict(LONG_1120, name="long-1120-f32", compute="float32")]

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
    return gemma4_stages(capture, features, standardize)


def gemma4_stages(capture, features, standardize):
    """The stages captured during a gemma4 run, the tower's output named `standardized` (when
    the tower standardizes), and the features as rows."""
    stages = dict(capture.stages)
    for key in [k for k in stages if k.split("#")[0] == "vision_tower"]:
        tower = stages.pop(key)
        if standardize:
            stages[key.replace("vision_tower", "standardized")] = tower.reshape(-1, tower.shape[-1])
    stages["features"] = features.reshape(-1, features.shape[-1])
    return stages


def video_settings(case, budget):
    """The video processor's keyword arguments of a case with a video (also written into its
    processor_config.json as the "video_processor" section, where ours reads them)."""
    v = case["vision"]
    settings = dict(patch_size=v.get("patch_size", 16), pooling_kernel_size=v.get("pooling_kernel_size", 3),
                    max_soft_tokens=budget, **case.get("video", {}))
    if case["model_type"] == "gemma4_unified":
        settings["model_patch_size"] = v.get("model_patch_size", 48)
    return settings


def run_video(model, case, paths, run, capture, standardize):
    """One video whose frames are the run's image files, each loaded by `load_image`, stacked
    as mlx-vlm's video path takes them ((T, C, H, W) uint8) and processed by the family's video
    processor. gemma4: `Model.encode_image(pixel_values_videos, video_position_ids)`, the same
    `embed_vision(vision_tower(...))` that `get_input_embeddings` runs for videos;
    gemma4_unified: `Model.get_video_features`."""
    frames = np.stack([np.asarray(load_image(p)) for p in paths]).transpose(0, 3, 1, 2)
    settings = video_settings(case, run["budget"])
    if case["model_type"] == "gemma4":
        data = gemma4_processing.Gemma4VideoProcessor(**settings)([frames])
    else:
        data = unified_processing.Gemma4UnifiedVideoProcessor(**settings)([frames])
    pixels, positions = mx.array(data["pixel_values_videos"]), mx.array(data["video_position_ids"])
    capture.active = True
    if case["model_type"] == "gemma4":
        features = model.encode_image(pixels, positions)
    else:
        features = model.get_video_features(pixels, positions)
    capture.active = False
    if case["model_type"] == "gemma4":
        return gemma4_stages(capture, features, standardize)
    return dict(capture.stages, features=features)


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


def run_case(case, out, seed, cache):
    """The case's checkpoint, inputs and reference stages in `out/<case>`: computed, or taken
    from `cache` when it holds this case for this reference and seed (`out/<case>` is then a
    link to the cached directory). Returns the case's manifest entry."""
    cached, hit = cache.directory(case["name"], case, seed)
    if not cached:
        return compute_case(case, os.path.join(out, case["name"]), seed)
    if hit:
        print(f"  {case['name']}: kept from an earlier run ({os.path.basename(cached)})", flush=True)
    else:
        staging = cached + ".partial"
        if os.path.isdir(staging):
            shutil.rmtree(staging)
        entry = compute_case(case, staging, seed)
        with open(os.path.join(staging, "entry.json"), "w") as f:
            json.dump(entry, f, indent=1)
        cache.commit(staging, cached, case["name"])
    link(cached, os.path.join(out, case["name"]))
    with open(os.path.join(cached, "entry.json")) as f:
        return json.load(f)


def compute_case(case, case_dir, seed):
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
        videos = [run for run in case["runs"] if run.get("video")]
        video = video_settings(case, videos[0]["budget"]) if videos and "video" in case else None
        save_checkpoint(model_dir, config, weights, case["layout"], case["runs"][0]["budget"], video)
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
        if run.get("video"):
            stages = run_video(model, case, paths, run, capture, case["vision"].get("standardize", False))
        elif case["model_type"] == "gemma4":
            stages = run_gemma4(model, processor, paths, run, capture, standardize)
        else:
            stages = run_unified(model, processor, paths, run, capture)
        mx.eval(list(stages.values()))
        for stage, value in stages.items():
            tensors[f"{run['name']}.{stage}"] = value
        runs.append(dict(name=run["name"], images=[os.path.relpath(p, case_dir) for p in paths],
                         budget=run["budget"], padded=run.get("padded"), video=run.get("video", False),
                         stages=list(stages)))
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
        parser.add_argument("--cache", help="keep each case's reference outputs in this directory between runs")

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
    cache = ReferenceCache(None if args.fixtures else args.cache)
    if cache.root:
        os.makedirs(cache.root, exist_ok=True)
    manifest = []
    for i, case in enumerate(cases):
        print(f"reference: {case['name']}", flush=True)
        # Quantized cases keep their seed whichever subset runs (their index in CASES).
        seed = 5000 + CASES.index(case) if case.get("quant") else 1234 + i
        manifest.append(run_case(case, out, seed, cache))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(dict(cases=manifest), f, indent=1)


if __name__ == "__main__":
    main()
