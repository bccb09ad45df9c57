"""Shared helpers: the repository's tiny checkpoints and the `gemma-vision` command.

`cargo xtask test` builds the wheel, installs it into .deps/venv and runs this suite with
GEMMA_VISION set to the command it built.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "crates" / "vision" / "tests" / "fixtures"


def model(case: str) -> Path:
    return FIXTURES / case / "model"


def image(case: str, name: str) -> Path:
    return FIXTURES / case / "images" / name


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `gemma-vision` command (GEMMA_VISION, else target/debug/gemma-vision)."""
    path = Path(os.environ.get("GEMMA_VISION", ROOT / "target" / "debug" / "gemma-vision"))
    if not path.is_file():
        pytest.fail(f"{path} not found: build it (cargo build -p gemma-vision) or set GEMMA_VISION")
    return path


def run(command: Path, *args: object, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(command), *map(str, args)], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"{command} {args}: exit {result.returncode}: {result.stderr}")
    return result


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a safetensors file as raw NumPy arrays (bf16 as uint16 bits)."""
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    dtypes = {"BF16": "<u2", "F32": "<f4", "I32": "<i4", "F16": "<u2"}
    out = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin : 8 + n + end], dtype=dtypes[entry["dtype"]]).reshape(entry["shape"])
    return out


def bits(array: np.ndarray) -> bytes:
    """The bytes of an array's values, row-major: equal bits compare equal."""
    return np.ascontiguousarray(array).tobytes()


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory) -> dict[str, Path]:
    """Small random gemma4 and gemma4_unified checkpoints (tiny_gemma4.py), with and without a
    quantized projector, written once per session: name -> model directory."""
    from tiny_gemma4 import write_checkpoint

    root = tmp_path_factory.mktemp("tiny-gemma4")
    specs = {
        "gemma4": ("gemma4", False),
        "gemma4-q4": ("gemma4", True),
        "gemma4_unified": ("gemma4_unified", False),
        "gemma4_unified-q4": ("gemma4_unified", True),
    }
    return {name: write_checkpoint(root / name, family, quantize=q, seed=i) for i, (name, (family, q)) in enumerate(specs.items())}
