#!/usr/bin/env python3
"""Writes the seed corpora of the config and checkpoint fuzz targets into fuzz/corpus/<target>/.

Seeds are small valid inputs (and a few near-misses) in each format, so the fuzzer starts from
the shapes real checkpoints have: the tiny test checkpoints' config.json and
processor_config.json, handmade safetensors files, and sharded indexes. Standard library only:

    python3 fuzz/make_seeds.py
"""

import json
import struct
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
FIXTURES = FUZZ.parent / "crates/vision/tests/fixtures"


def write(target, name, data):
    path = FUZZ / "corpus" / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def model_configs():
    for case in ["tiny-clipped", "tiny-f32", "tiny-unified"]:
        write("model_config", f"{case}.json", (FIXTURES / case / "model/config.json").read_bytes())
    write("model_config", "gemma4-defaults.json", json.dumps({"model_type": "gemma4", "vision_config": {}}))
    write(
        "model_config",
        "gemma4-e2b-like.json",
        json.dumps(
            {
                "model_type": "gemma4",
                "vision_config": {
                    "hidden_size": 768,
                    "num_hidden_layers": 16,
                    "num_attention_heads": 12,
                    "num_key_value_heads": 12,
                    "head_dim": 64,
                    "rope_parameters": {"rope_theta": 100.0},
                    "standardize": False,
                },
                "text_config": {"hidden_size": 1536},
            }
        ),
    )
    write(
        "model_config",
        "unified-defaults.json",
        json.dumps({"model_type": "gemma4_unified", "vision_config": {}, "text_config": {"hidden_size": 3840}}),
    )
    write("model_config", "bad-head-dim.json", json.dumps({"model_type": "gemma4", "vision_config": {"head_dim": 70}}))
    # Regressions: sizes whose products overflowed i32 (found by this target).
    write("model_config", "overflow-unified-patch.json", json.dumps({"model_type": "gemma4_unified", "vision_config": {"patch_size": 999999924}}))
    write("model_config", "overflow-siglip-patch.json", json.dumps({"model_type": "gemma4", "vision_config": {"patch_size": 30000}}))
    # Regression: a float not read correctly rounded did not survive being written back.
    write("model_config", "float-1e-25.json", '{"model_type": "gemma4", "vision_config": {"rms_norm_eps": 1e-25}}')


def processor_configs():
    for case in ["tiny-clipped", "tiny-unified"]:
        write("processor_config", f"{case}.json", (FIXTURES / case / "model/processor_config.json").read_bytes())
    write("processor_config", "flat.json", json.dumps({"patch_size": 16, "max_soft_tokens": 280, "pooling_kernel_size": 3}))
    write(
        "processor_config",
        "unified-num-soft-tokens.json",
        json.dumps({"image_processor": {"num_soft_tokens": 1120, "image_mean": [0.5], "image_std": None}}),
    )
    # Regression: 280 · pool² overflowed u64 (found by this target).
    write("processor_config", "overflow-pool.json", json.dumps({"max_soft_tokens": 280, "pooling_kernel_size": 3888888888}))
    write("processor_config", "normalize.json", json.dumps({"image_processor": {"do_normalize": True, "image_mean": [0.1, 0.2, 0.3], "image_std": [1, 2, 3]}}))


def safetensors(tensors, metadata=None):
    """A safetensors file of `tensors`: (name, dtype, shape, data bytes), in order."""
    header, data, offset = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors_headers():
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    write("safetensors_header", "one-f32.safetensors", safetensors([("w", "F32", [2, 3], f32)]))
    write(
        "safetensors_header",
        "mixed.safetensors",
        safetensors(
            [
                ("model.vision_tower.a.weight", "BF16", [2, 2], b"\x80\x3f" * 4),
                ("model.vision_tower.a.input_min", "F32", [], struct.pack("<f", -1)),
                ("ids", "I64", [1, 2], struct.pack("<2q", 7, -1)),
                ("empty", "F16", [0, 4], b""),
                ("flag", "BOOL", [3], b"\x01\x00\x01"),
            ],
            metadata={"format": "pt"},
        ),
    )
    write("safetensors_header", "f8.safetensors", safetensors([("q", "F8_E4M3", [4], b"\x00" * 4)]))
    write("safetensors_header", "empty-header.safetensors", safetensors([]))
    truncated = safetensors([("w", "F32", [2, 3], f32)])
    write("safetensors_header", "truncated.safetensors", truncated[:-5])
    size = (1 << 61) - 1
    huge = {f"t{i}": {"dtype": "U8", "shape": [size], "data_offsets": [i * size, (i + 1) * size]} for i in range(8)}
    text = json.dumps(huge).encode()
    write("safetensors_header", "offsets-past-usize.safetensors", struct.pack("<Q", len(text)) + text + b"\x00" * 16)


def sharded_indexes():
    weight_map = {
        "model.vision_tower.patch_embedder.input_proj.weight": "model-00001-of-00002.safetensors",
        "model.embed_vision.embedding_projection.weight": "model-00002-of-00002.safetensors",
        "model.language_model.embed_tokens.weight": "model-00002-of-00002.safetensors",
    }
    write("sharded_index", "index.json", json.dumps({"metadata": {"total_size": 1234}, "weight_map": weight_map}))
    write("sharded_index", "self-shard.json", json.dumps({"weight_map": {"x": "model.safetensors.index.json"}}))
    write("sharded_index", "traversal.json", json.dumps({"weight_map": {"x": "../model.safetensors"}}))
    write("sharded_index", "not-a-map.json", json.dumps({"weight_map": ["model.safetensors"]}))


if __name__ == "__main__":
    model_configs()
    processor_configs()
    safetensors_headers()
    sharded_indexes()
