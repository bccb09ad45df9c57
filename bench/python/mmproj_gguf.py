"""GGUF mmproj of a gemma4 or gemma4_unified checkpoint, for llama.cpp's mtmd (clip) vision encoder.

    mmproj_gguf.py --model DIR --out FILE.gguf --dtype f32|f16|bf16|q8_0 [--activation reference|converter]

Writes, with the `gguf` package alone, what llama.cpp's own converter writes for the vision
part of these checkpoints (`conversion/gemma.py`, `Gemma4VisionAudioModel` and
`Gemma4UnifiedVisionAudioModel`, with `MmprojModel` and `ModelBase.prepare_tensors` of
`conversion/base.py`, in the llama.cpp vendored by llama-cpp-python 0.3.36); that converter
imports torch, this does not. Read off it:

- tensor names (`gguf-py/gguf/tensor_mapping.py` / `constants.py` for MODEL_ARCH.MMPROJ):
  `v.patch_embd.weight`, `v.position_embd.weight`, `v.blk.N.{ln1, attn_q, attn_k, attn_v,
  attn_q_norm, attn_k_norm, attn_out, attn_post_norm, ln2, ffn_gate, ffn_up, ffn_down,
  ffn_post_norm, out_scale}`, clipped linears' `.input_min/.input_max/.output_min/.output_max`,
  `v.std_bias`, `v.std_scale`, `mm.input_projection.weight`; unified: `v.patch_embd.{weight,bias}`,
  `v.patch_norm.{1,2,3}.{weight,bias}` (patch_ln1, patch_ln2, pos_norm), `v.position_embd.weight`;
- layouts: the gemma4 patch projection `[D, p²·3]` (rows × (y, x, channel)) reshaped to the conv
  kernel `[D, 3, p, p]`; the unified patch projection's columns and patch_ln1 reordered from
  (y, x, channel) to (channel, y, x), the order of ggml's im2col; the unified position table
  `[T, 2, E]` transposed to `[2, T, E]`; scalars as 1-element vectors;
- types (the converter's `--outtype`, `ModelBase.prepare_tensors` with the `tensor_force_quant`
  of `MmprojModel` and `Gemma4VisionAudioModel`): f32 writes every tensor in float32; f16, bf16
  and q8_0 keep vectors (scalars and clip bounds included), norms, position tables and
  non-`.weight` tensors in float32, and write the patch projection (`v.patch_embd.weight`) in
  float16 for f16 but float32 for bf16 and q8_0; every other matrix is float16 (f16), bfloat16
  (bf16: the checkpoint's own bf16 values, so exact) or Q8_0 (q8_0:
  blocks of 32 along its rows, quantized by the `gguf` package's `quants.quantize`, which
  falls back to float16 for a matrix whose rows are not a multiple of 32);
- metadata: `general.architecture = clip`, `general.type = mmproj`, `general.file_type`,
  `clip.has_vision_encoder`, `clip.vision.{projector_type, projection_dim, image_size (224),
  patch_size, embedding_length, feed_forward_length, block_count, attention.head_count,
  attention.layer_norm_epsilon, image_mean, image_std}`.

One deliberate difference, `--activation`: the converter writes no `clip.use_gelu`, so llama.cpp
runs the MLP with its default `gelu_quick` (x·σ(1.702x)), where the reference computes
`gelu_pytorch_tanh`. `reference` (the default) writes `clip.use_gelu = true`, so that llama.cpp
computes the reference's function (tanh-approximated GELU); `converter` leaves it out as the
converter does.

Run with the project's venv and the `gguf` package on PYTHONPATH (`cargo xtask bench e2e`
installs it apart, in .deps/, so the reference's environment stays as pip installs it).
"""

import argparse
import json
import os
import sys

import mlx.core as mx
import numpy as np

# The parity suite's reference modules (`crates/parity/python`).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "parity", "python"))
import vision  # noqa: E402

import gguf  # noqa: E402  (a separate install, see the module doc)

# The converter's Gemma4VisionAudioModel fixes image_size (unused by the encoder).
IMAGE_SIZE = 224

# Per-layer tensors of the gemma4 tower: the reference's name under `encoder.layers.N.` and the
# GGUF name under `v.blk.N.` (tensor_mapping.py's MMPROJ entries marked gemma4; the converter
# drops ClippableLinear's `.linear` level before mapping).
LAYER_TENSORS = {
    "input_layernorm": "ln1",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_out",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "attn_post_norm",
    "pre_feedforward_layernorm": "ln2",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "post_feedforward_layernorm": "ffn_post_norm",
    "layer_scalar": "out_scale",
}
CLIP_BOUNDS = ("input_min", "input_max", "output_min", "output_max")


def read_weights(directory):
    """Every tensor of the checkpoint (one file or shards), as float32 NumPy arrays."""
    index = os.path.join(directory, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    weights = {}
    for name in files:
        for key, value in mx.load(os.path.join(directory, name)).items():
            weights[key.removeprefix("model.")] = np.array(value.astype(mx.float32))
    return weights


def gemma4_tensors(weights, v):
    """(GGUF name, float32 array) of the gemma4 tower and its embedder."""
    out = []
    for name, w in weights.items():
        if name == "vision_tower.patch_embedder.input_proj.weight":
            p = v.patch_size
            out.append(("v.patch_embd.weight", w.reshape(w.shape[0], p, p, 3).transpose(0, 3, 1, 2)))
        elif name == "vision_tower.patch_embedder.position_embedding_table":
            out.append(("v.position_embd.weight", w))
        elif name in ("vision_tower.std_bias", "vision_tower.std_scale"):
            out.append(("v." + name.rsplit(".", 1)[1], w))
        elif name == "embed_vision.embedding_projection.weight":
            out.append(("mm.input_projection.weight", w))
        elif name.startswith("vision_tower.encoder.layers."):
            layer, rest = name.removeprefix("vision_tower.encoder.layers.").split(".", 1)
            rest = rest.replace(".linear.weight", ".weight")
            base, leaf = rest.rsplit(".", 1) if rest != "layer_scalar" else ("layer_scalar", "weight")
            if base not in LAYER_TENSORS or leaf not in ("weight",) + CLIP_BOUNDS:
                raise ValueError(f"no GGUF name for {name}")
            out.append((f"v.blk.{layer}.{LAYER_TENSORS[base]}.{leaf}", w.reshape(-1) if w.ndim == 0 else w))
    return out


def chw_order(p):
    """For each (channel, y, x) position of a p×p patch, its (y, x, channel) index."""
    i = np.arange(p * p * 3)
    channel, y, x = i // (p * p), (i % (p * p)) // p, i % p
    return y * p * 3 + x * 3 + channel


def unified_tensors(weights, v):
    """(GGUF name, float32 array) of the unified embedder and its projection."""
    order = chw_order(v.model_patch_size)
    names = {
        "vision_embedder.patch_dense.weight": ("v.patch_embd.weight", lambda w: w[:, order]),
        "vision_embedder.patch_dense.bias": ("v.patch_embd.bias", None),
        "vision_embedder.patch_ln1.weight": ("v.patch_norm.1.weight", lambda w: w[order]),
        "vision_embedder.patch_ln1.bias": ("v.patch_norm.1.bias", lambda w: w[order]),
        "vision_embedder.patch_ln2.weight": ("v.patch_norm.2.weight", None),
        "vision_embedder.patch_ln2.bias": ("v.patch_norm.2.bias", None),
        "vision_embedder.pos_norm.weight": ("v.patch_norm.3.weight", None),
        "vision_embedder.pos_norm.bias": ("v.patch_norm.3.bias", None),
        "vision_embedder.pos_embedding": ("v.position_embd.weight", lambda w: w.transpose(1, 0, 2)),
        "embed_vision.embedding_projection.weight": ("mm.input_projection.weight", None),
    }
    out = []
    for name, w in weights.items():
        if name.startswith(("vision_embedder.", "embed_vision.")):
            if name not in names:
                raise ValueError(f"no GGUF name for {name}")
            gguf_name, change = names[name]
            out.append((gguf_name, change(w) if change else w))
    return out


def stored_type(name, array, dtype):
    """The converter's type for one tensor in a file of `dtype` (see the module doc)."""
    types = gguf.GGMLQuantizationType
    if dtype == "f32" or array.ndim <= 1 or name.endswith("_norm.weight"):
        return types.F32
    if name == "v.patch_embd.weight":
        return types.F16 if dtype == "f16" else types.F32
    if name == "v.position_embd.weight" or not name.endswith(".weight"):
        return types.F32
    return {"f16": types.F16, "bf16": types.BF16}.get(dtype, types.Q8_0)


def stored(name, array, dtype):
    """(data, type) of one tensor as the converter writes it: Q8_0 as the quantizer's bytes."""
    qtype = stored_type(name, array, dtype)
    data = np.ascontiguousarray(array, dtype=np.float32)
    try:
        return gguf.quants.quantize(data, qtype), qtype
    except gguf.quants.QuantError:
        # The converter's fallback for rows the blocks do not divide.
        return gguf.quants.quantize(data, gguf.GGMLQuantizationType.F16), gguf.GGMLQuantizationType.F16


# `general.file_type` of each `--dtype` (gguf's LlamaFileType).
FILE_TYPES = {"f32": 0, "f16": 1, "bf16": 32, "q8_0": 7}  # ALL_F32, MOSTLY_F16, MOSTLY_BF16, MOSTLY_Q8_0


def write(args):
    with open(os.path.join(args.model, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(args.model, "processor_config.json")) as f:
        processor = json.load(f).get("image_processor", {})
    model = vision.build_reference_model(config)
    v = model.config.vision_config
    unified = config["model_type"] == "gemma4_unified"
    weights = read_weights(args.model)
    tensors = unified_tensors(weights, v) if unified else gemma4_tensors(weights, v)

    writer = gguf.GGUFWriter(args.out, "clip")
    writer.add_type("mmproj")
    writer.add_name(os.path.basename(os.path.normpath(args.model)))
    writer.add_file_type(FILE_TYPES[args.dtype])
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_uint32("clip.vision.projection_dim", config["text_config"]["hidden_size"])
    writer.add_uint32("clip.vision.image_size", IMAGE_SIZE)
    writer.add_uint32("clip.vision.patch_size", v.patch_size)
    if unified:
        # The converter's Gemma4UnifiedVisionAudioModel: a transformer-less tower.
        dims = dict(embedding_length=v.mm_embed_dim, feed_forward_length=0, block_count=0, head_count=0)
    else:
        dims = dict(embedding_length=v.hidden_size, feed_forward_length=v.intermediate_size,
                    block_count=v.num_hidden_layers, head_count=v.num_attention_heads)
    writer.add_uint32("clip.vision.embedding_length", dims["embedding_length"])
    writer.add_uint32("clip.vision.feed_forward_length", dims["feed_forward_length"])
    writer.add_uint32("clip.vision.block_count", dims["block_count"])
    writer.add_uint32("clip.vision.attention.head_count", dims["head_count"])
    writer.add_array("clip.vision.image_mean", [float(x) for x in processor.get("image_mean", [0.0] * 3)])
    writer.add_array("clip.vision.image_std", [float(x) for x in processor.get("image_std", [1.0] * 3)])
    writer.add_string("clip.vision.projector_type", "gemma4uv" if unified else "gemma4v")
    # The converter writes the vision config's `layer_norm_eps`, absent from gemma4 configs: its
    # default 1e-6 (the reference's rms_norm_eps).
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    if args.activation == "reference":
        writer.add_bool("clip.use_gelu", True)
    types = {}
    for name, array in tensors:
        data, qtype = stored(name, array, args.dtype)
        types[qtype.name] = types.get(qtype.name, 0) + 1
        writer.add_tensor(name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(json.dumps(dict(gguf=args.out, dtype=args.dtype, activation=args.activation, tensors=len(tensors),
                          types=types, projector="gemma4uv" if unified else "gemma4v")), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--dtype", choices=tuple(FILE_TYPES), required=True)
    parser.add_argument("--activation", choices=("reference", "converter"), default="reference")
    write(parser.parse_args())


if __name__ == "__main__":
    main()
