"""Reading what ``gemma-vision embed`` wrote: shards of soft tokens and the errors file.

A shard (``shard-NNNNNN.safetensors``) holds ``soft_tokens`` (int32 ``[N]``), ``features``
(``[sum(soft_tokens), D]``, bfloat16 or float32) and metadata: ``images`` (JSON rows
``{path, soft_tokens, height, width, budget}`` in row order), ``errors`` (``{path, error}``),
``model_identity`` and ``max_soft_tokens``. A shard in which every image failed has no tensors.
Only NumPy (and ml_dtypes for bfloat16) is needed to read them.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Iterator, NamedTuple, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]


class EmbeddedImage(NamedTuple):
    """One image of an ``embed`` output."""

    path: str
    """The image's path as the job listed it."""
    features: np.ndarray
    """``[soft_tokens, D]``, the encoder's dtype (``ml_dtypes.bfloat16`` or ``float32``)."""
    soft_tokens: int
    height: int
    width: int
    """The decoded image's size in pixels (after its EXIF orientation)."""
    budget: int
    model_identity: str
    shard: str
    """The shard file holding it."""


def _dtype(name: str) -> np.dtype:
    if name == "BF16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({"F32": "<f4", "F16": "<f2", "I32": "<i4"}[name])


def _read(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    metadata = header.pop("__metadata__", {})
    start = 8 + header_len
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        array = np.frombuffer(data[start + begin : start + end], dtype=_dtype(entry["dtype"]))
        tensors[name] = array.reshape(entry["shape"])
    return metadata, tensors


def shard_paths(out_dir: PathLike) -> list[Path]:
    """The shard files of ``out_dir``, in shard order."""
    return sorted(Path(out_dir).glob("shard-[0-9]*.safetensors"))


def read_shards(out_dir: PathLike) -> Iterator[EmbeddedImage]:
    """Every encoded image of ``out_dir``, shard by shard, in each shard's row order."""
    for shard in shard_paths(out_dir):
        metadata, tensors = _read(shard)
        rows = json.loads(metadata.get("images", "[]"))
        features = tensors.get("features")
        start = 0
        for row in rows:
            n = row["soft_tokens"]
            yield EmbeddedImage(
                path=row["path"],
                features=features[start : start + n],
                soft_tokens=n,
                height=row["height"],
                width=row["width"],
                budget=row["budget"],
                model_identity=metadata["model_identity"],
                shard=shard.name,
            )
            start += n


def read_errors(out_dir: PathLike) -> list[dict]:
    """The images of ``out_dir`` that could not be read: ``{"path": …, "error": …}`` each."""
    errors = []
    for shard in shard_paths(out_dir):
        metadata, _ = _read(shard)
        errors.extend(json.loads(metadata.get("errors", "[]")))
    return errors
