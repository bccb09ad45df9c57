"""`python -m gemma_vision.mlx_vlm.server` against `python -m mlx_vlm.server` on loopback: one real
HTTP chat request with an image to each, the same tokens back (their text and log-probabilities),
the accelerated server saying in its log that it runs our encoder. Offline (HF_HUB_OFFLINE=1)."""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

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


def test_reload_is_refused():
    result = subprocess.run([sys.executable, "-m", "gemma_vision.mlx_vlm.server", "--reload"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0 and "--reload" in result.stderr
