"""`python -m gemma_vision.mlx_vlm.server` against `python -m mlx_vlm.server` on loopback: one real
HTTP chat request with an image to each, the same tokens back (their text and log-probabilities),
the accelerated server saying in its log that it runs our encoder. Offline (HF_HUB_OFFLINE=1)."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

import mlx.core as mx
import numpy as np
import pytest
from PIL import Image

STARTUP_SECONDS = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(module: str, model: Path, log: Path) -> Iterator[str]:
    """`python -m <module> --model <model>` on a free loopback port, until the block ends; yields
    its base URL once /health answers."""
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    command = [sys.executable, "-m", module, "--model", str(model), "--host", "127.0.0.1", "--port", str(port)]
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"{module} exited with {process.returncode}:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{module} did not answer within {STARTUP_SECONDS} s:\n{log.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def chat(url: str, model: Path, image: bytes) -> dict:
    """One OpenAI-style chat completion with an image (a data URL), greedy, with log-probabilities."""
    picture = "data:image/png;base64," + base64.b64encode(image).decode()
    content = [{"type": "text", "text": "describe the image"}, {"type": "image_url", "image_url": {"url": picture}}]
    body = dict(model=str(model), messages=[{"role": "user", "content": content}], max_tokens=8, temperature=0.0,
                logprobs=True, top_logprobs=0)
    request = urllib.request.Request(f"{url}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def png(width: int, height: int, seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize("checkpoint", ["gemma4", "gemma4_unified-q4"])
def test_the_accelerated_server_answers_with_the_stock_servers_tokens(tiny_checkpoints, tmp_path, checkpoint):
    model = tiny_checkpoints[checkpoint]
    logs = {"stock": tmp_path / "stock.log", "ours": tmp_path / "ours.log"}
    with ExitStack() as servers:
        stock = servers.enter_context(server("mlx_vlm.server", model, logs["stock"]))
        ours = servers.enter_context(server("gemma_vision.mlx_vlm.server", model, logs["ours"]))
        answers = {}
        for name, url in (("stock", stock), ("ours", ours)):
            answers[name] = [chat(url, model, png(56, 40, 1)), chat(url, model, png(30, 30, 2))]
    assert f"gemma_vision: {model} accelerated" in logs["ours"].read_text()
    assert "gemma_vision" not in logs["stock"].read_text()
    for theirs, mine in zip(answers["stock"], answers["ours"]):
        stock_choice, our_choice = theirs["choices"][0], mine["choices"][0]
        tokens = [(t["token"], t["logprob"]) for t in our_choice["logprobs"]["content"]]
        assert tokens == [(t["token"], t["logprob"]) for t in stock_choice["logprobs"]["content"]]
        assert tokens, "some tokens were generated"
        assert our_choice["message"]["content"] == stock_choice["message"]["content"]
        assert mine["usage"] == theirs["usage"]
    # The two images give two answers: the image reaches the model.
    assert answers["stock"][0]["choices"][0]["logprobs"] != answers["stock"][1]["choices"][0]["logprobs"]


@pytest.mark.parametrize("arguments", [["--reload"], ["--relo"], ["--rel"], ["--port", "0", "--reloa"]])
def test_reload_is_refused_in_every_spelling_mlx_vlm_accepts(arguments):
    """mlx-vlm's parser takes any unambiguous prefix of an option: each is refused, before the
    server starts."""
    result = subprocess.run([sys.executable, "-m", "gemma_vision.mlx_vlm.server", *arguments], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2 and "--reload runs the server in a fresh process" in result.stderr, result.stderr


def split_vision_tensor(source: Path, directory: Path) -> Path:
    """A copy of the checkpoint with one vision tensor in a second `*.safetensors` file and no
    index: mlx-vlm loads it (either file's copy; they are equal), our encoder refuses to guess
    which file to read (OSError)."""
    directory.mkdir()
    for path in source.iterdir():
        shutil.copy(path, directory / path.name)
    weights = mx.load(str(source / "model.safetensors"))
    name = next(k for k in sorted(weights) if k.startswith("vision_tower."))
    mx.save_safetensors(str(directory / "extra.safetensors"), {name: weights[name]})
    return directory


def test_a_model_whose_acceleration_fails_is_served_by_mlx_vlm_with_one_log_line(tiny_checkpoints, tmp_path,
                                                                                 monkeypatch, caplog):
    from mlx_vlm.server import generation

    from gemma_vision.mlx_vlm import acceleration_of
    from gemma_vision.mlx_vlm import server as accelerated_server

    load_resources = accelerated_server._accelerating(generation.load_model_resources)
    split = split_vision_tensor(tiny_checkpoints["gemma4"], tmp_path / "split")

    def failing(_model):
        raise RuntimeError("an error inside MLX")

    for directory, patched, failure in [(split, False, "OSError: "), (tiny_checkpoints["gemma4"], True, "RuntimeError")]:
        if patched:
            monkeypatch.setattr(accelerated_server, "accelerate", failing)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="gemma_vision.mlx_vlm.server"):
            model, _processor, _config = load_resources(str(directory), None)
        assert acceleration_of(model) is None
        lines = [r.getMessage() for r in caplog.records if r.name == "gemma_vision.mlx_vlm.server"]
        assert len(lines) == 1 and "not accelerated, mlx-vlm's own encoder serves it" in lines[0], lines
        assert failure in lines[0], lines


def test_the_accelerated_server_serves_a_checkpoint_it_cannot_accelerate(tiny_checkpoints, tmp_path):
    """The split checkpoint (OSError in the weight check) is served, by mlx-vlm's encoder, with
    the stock server's tokens."""
    model = split_vision_tensor(tiny_checkpoints["gemma4"], tmp_path / "split")
    logs = {"stock": tmp_path / "stock.log", "ours": tmp_path / "ours.log"}
    with ExitStack() as servers:
        stock = servers.enter_context(server("mlx_vlm.server", model, logs["stock"]))
        ours = servers.enter_context(server("gemma_vision.mlx_vlm.server", model, logs["ours"]))
        theirs, mine = chat(stock, model, png(56, 40, 1)), chat(ours, model, png(56, 40, 1))
    log = logs["ours"].read_text()
    assert log.count("not accelerated, mlx-vlm's own encoder serves it") == 1 and "OSError" in log, log
    assert mine["choices"][0]["logprobs"] == theirs["choices"][0]["logprobs"]
    assert mine["choices"][0]["message"]["content"] == theirs["choices"][0]["message"]["content"]
