"""`gemma_vision.embed`: the corpus job from Python writes what `gemma-vision embed` writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import gemma_vision
from conftest import bits, model, run


def corpus(directory, count=6):
    rng = np.random.default_rng(3)
    directory.mkdir()
    for i in range(count):
        size = [(32, 24), (24, 32)][i % 2]
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(directory / f"img-{i}.png")
    (directory / "broken.png").write_bytes(b"not a png")


def test_the_job_from_python_writes_the_commands_shards_and_resumes(cli, tmp_path):
    images = tmp_path / "images"
    corpus(images)
    ours, theirs = tmp_path / "python", tmp_path / "command"
    summary = gemma_vision.embed(model("tiny-clipped"), images, ours, max_soft_tokens=6, batch=2, shard_size=3)
    run(cli, "embed", "--model", model("tiny-clipped"), "--images", images, "--out", theirs,
        "--max-soft-tokens", "6", "--batch", "2", "--shard-size", "3")
    assert (summary["encoded"], summary["failed"], summary["skipped"], summary["max_soft_tokens"]) == (6, 1, 0, 6)
    assert summary["model_identity"] == gemma_vision.Encoder(model("tiny-clipped")).identity
    a = {image.path: image for image in gemma_vision.read_shards(ours)}
    b = {image.path: image for image in gemma_vision.read_shards(theirs)}
    assert sorted(a) == sorted(b) and len(a) == 6
    for path in a:
        assert bits(a[path].features) == bits(b[path].features), path
    again = gemma_vision.embed(model("tiny-clipped"), images, ours, max_soft_tokens=6)
    assert (again["encoded"], again["skipped"], again["shards"]) == (0, 7, 0)


def test_bad_arguments_are_the_library_errors_as_exceptions(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        gemma_vision.embed(model("tiny-clipped"), tmp_path / "missing", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no images"):
        gemma_vision.embed(model("tiny-clipped"), tmp_path / "empty", tmp_path / "out")
    with pytest.raises(ValueError, match="batch must be positive"):
        gemma_vision.embed(model("tiny-clipped"), tmp_path, tmp_path / "out", batch=0)
    with pytest.raises(ValueError, match='dtype must be "native" or "f32"'):
        gemma_vision.embed(model("tiny-clipped"), tmp_path, tmp_path / "out", dtype="f16")


def test_files_that_fail_in_any_way_are_recorded_with_their_kind_and_the_job_goes_on(tmp_path):
    images = tmp_path / "images"
    corpus(images, count=2)
    (images / "png-named.jpg").write_bytes((images / "img-0.png").read_bytes())
    (images / "drawing.eps").write_bytes(b"%!PS-Adobe-3.0 EPSF-3.0\n" + bytes(40))
    (images / "README").write_text("not an image")
    out = tmp_path / "out"
    summary = gemma_vision.embed(model("tiny-clipped"), images, out, max_soft_tokens=6)
    assert (summary["encoded"], summary["failed"]) == (3, 3)
    rows = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    kinds = {Path(row["path"]).name: row["kind"] for row in rows}
    assert kinds == {"README": "unknown_format", "broken.png": "unknown_format", "drawing.eps": "unsupported_format"}
    assert any(row["error"].endswith("EPS is not supported") for row in rows)
    again = gemma_vision.embed(model("tiny-clipped"), images, out, max_soft_tokens=6)
    assert (again["encoded"], again["failed"], again["skipped"]) == (0, 0, 6)
