"""``Encoder("org/name")``: a model by its Hub name, against the Hub stand-in on 127.0.0.1
(``hub_stand_in``, the `hub` crate's example, hosting a seeded checkpoint: the tiny fixture's
tensors spread over two shards beside language-model tensors), with the caches in a temporary
``HF_HOME``."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

import gemma_vision
from conftest import ROOT, bits, image, model

HUB_VARIABLES = ["HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "GEMMA_VISION_CACHE", "HF_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE"]


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The stand-in serving ``org/tiny`` (tiny-clipped, seeded) on ``main``: (endpoint, commit)."""
    binary = Path(os.environ.get("HUB_STAND_IN", ROOT / "target" / "debug" / "examples" / "hub_stand_in"))
    if not binary.is_file():
        pytest.fail(f"{binary} not found: cargo build -p gemma-vision-hub --features stand-in --example hub_stand_in")
    process = subprocess.Popen(
        [str(binary), "--seeded", f"org/tiny={model('tiny-clipped')}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    endpoint = process.stdout.readline().strip()
    repo, commit = process.stdout.readline().split()
    assert repo == "org/tiny" and endpoint.startswith("http://127.0.0.1:")
    for variable in HUB_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    yield endpoint, commit
    process.stdin.close()
    process.wait(timeout=30)


def served(endpoint: str) -> dict:
    with urllib.request.urlopen(f"{endpoint}/_stand_in/served") as answer:
        return json.load(answer)


def test_a_model_by_name_gives_the_directorys_bits_and_fetches_only_the_vision_bytes(hub, monkeypatch):
    endpoint, commit = hub
    pictures = [str(image("tiny-clipped", "gradient-37x23.png")), str(image("tiny-clipped", "checker-20x30.png"))]
    by_name = gemma_vision.Encoder("org/tiny")
    local = gemma_vision.Encoder(model("tiny-clipped"))
    assert [bits(f) for f in by_name.encode(pictures)] == [bits(f) for f in local.encode(pictures)]
    assert by_name.identity == local.identity

    origin = by_name.inspect()["origin"]
    assert origin["kind"] == "fetched" and origin["repo"] == "org/tiny" and origin["commit"] == commit
    first = served(endpoint)
    assert sum(first["content_bytes"].values()) == origin["fetched_bytes"]
    assert origin["fetched_bytes"] * 4 < origin["checkpoint_bytes"]
    assert not any(name.endswith("tokenizer.json") for name in first["content_bytes"])

    # Offline, a pinned commit and the branch both load from the store without a request.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ["org/tiny", f"org/tiny@{commit}"]:
        again = gemma_vision.Encoder(name)
        assert [bits(f) for f in again.encode(pictures)] == [bits(f) for f in local.encode(pictures)]
    after = served(endpoint)
    assert (after["metadata_requests"], after["content_requests"]) == (first["metadata_requests"], first["content_requests"])


def test_a_name_that_fails_raises_with_what_to_do(hub, monkeypatch):
    with pytest.raises(OSError, match=r"org/missing@main.*HF_TOKEN"):
        gemma_vision.Encoder("org/missing")
    monkeypatch.setenv("HF_TOKEN", "hf_any")
    with pytest.raises(FileNotFoundError, match=r"org/missing@main: the Hub has no such model repository"):
        gemma_vision.Encoder("org/missing")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match="HF_HUB_OFFLINE"):
        gemma_vision.Encoder("org/tiny@v2")
    with pytest.raises(TypeError, match="model"):
        gemma_vision.Encoder(42)
