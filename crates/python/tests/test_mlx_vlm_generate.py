"""mlx-vlm's own `generate_step` with and without `gemma_vision.mlx_vlm.accelerate`, on small
random gemma4 and gemma4_unified checkpoints (a quantized projector included): the same greedy
tokens and the same logits at every step, for one image, two images of different sizes in one
prompt, and video frames; mlx-vlm's own vision modules never run once accelerated."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import mlx.core as mx
import numpy as np
import pytest
from mlx_vlm.generate.ar import generate_step
from mlx_vlm.models.gemma4 import gemma4 as gemma4_model
from mlx_vlm.models.gemma4 import vision as gemma4_vision
from mlx_vlm.models.gemma4_unified import gemma4_unified as unified_model
from mlx_vlm.prompt_utils import apply_chat_template
from mlx_vlm.utils import load, prepare_inputs
from PIL import Image

from gemma_vision.mlx_vlm import EncoderVisionTower, accelerate

TOKENS = 8


def images(sizes: list[tuple[int, int]]) -> list[Image.Image]:
    rng = np.random.default_rng(7)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in sizes]


def video() -> np.ndarray:
    """Six frames (T, C, H, W) uint8: the tiny checkpoints' video processor keeps four."""
    return np.random.default_rng(8).integers(0, 256, (6, 3, 40, 56), dtype=np.uint8)


def model_inputs(model, processor, case: str) -> dict:
    """What mlx-vlm's processor makes of the case's prompt and media."""
    if case == "video":
        prompt = "<bos><start_of_turn>user\n<|video|>describe the video<end_of_turn>\n<start_of_turn>model\n"
        return prepare_inputs(processor, videos=[video()], prompts=prompt)
    pictures = images([(56, 40)] if case == "one image" else [(56, 40), (30, 30)])
    prompt = apply_chat_template(processor, model.config, "describe the image", num_images=len(pictures))
    return prepare_inputs(processor, images=pictures, prompts=prompt)


def greedy(model, inputs: dict) -> tuple[list[int], list[np.ndarray]]:
    """`generate_step`'s greedy tokens and the logits it sampled each from (recorded by a logits
    processor that returns them unchanged)."""
    logits = []

    def record(_tokens: mx.array, step_logits: mx.array) -> mx.array:
        logits.append(np.array(step_logits.astype(mx.float32)))
        return step_logits

    kwargs = {k: v for k, v in inputs.items() if k not in ("input_ids", "pixel_values", "attention_mask")}
    steps = generate_step(inputs["input_ids"], model, inputs.get("pixel_values"), inputs.get("attention_mask"),
                          max_tokens=TOKENS, temperature=0.0, logits_processors=[record], **kwargs)
    tokens = [int(token) for token, _ in steps]
    return tokens, logits


def dimmed(inputs: dict) -> dict:
    """The inputs with every pixel halved."""
    out = dict(inputs)
    for key in ("pixel_values", "pixel_values_videos"):
        value = inputs.get(key)
        if isinstance(value, list):
            out[key] = [mx.array(v) * 0.5 for v in value]
        elif value is not None:
            out[key] = value * 0.5
    return out


@contextmanager
def stock_vision_refused(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """mlx-vlm's own vision modules raise while this is active."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("mlx-vlm's own vision encoder ran")

    with monkeypatch.context() as patch:
        patch.setattr(gemma4_vision.VisionModel, "__call__", refuse)
        patch.setattr(gemma4_model.MultimodalEmbedder, "__call__", refuse)
        patch.setattr(unified_model.VisionEmbedder, "__call__", refuse)
        yield


@pytest.mark.parametrize("checkpoint", ["gemma4", "gemma4-q4", "gemma4_unified", "gemma4_unified-q4"])
@pytest.mark.parametrize("case", ["one image", "two sizes", "video"])
def test_generate_step_gives_the_same_tokens_and_logits(tiny_checkpoints, monkeypatch, checkpoint, case):
    model, processor = load(str(tiny_checkpoints[checkpoint]))
    inputs = model_inputs(model, processor, case)
    if case == "two sizes" and not checkpoint.startswith("gemma4_unified"):
        assert isinstance(inputs["pixel_values"], list), "images of two sizes reach gemma4 as a list"
    stock_tokens, stock_logits = greedy(model, inputs)

    acceleration = accelerate(model)
    assert acceleration.encoder.dtype == "native"
    with stock_vision_refused(monkeypatch):
        tokens, logits = greedy(model, inputs)
    assert tokens == stock_tokens
    assert len(logits) == len(stock_logits) >= TOKENS
    for step, (ours, theirs) in enumerate(zip(logits, stock_logits)):
        assert np.array_equal(ours, theirs), f"step {step}: logits differ"
    # The test can fail: the pixels decide the logits.
    dim = greedy(model, dimmed(inputs))[1][0]
    assert not np.array_equal(dim, stock_logits[0]), "other pixels, other logits"


@pytest.mark.parametrize("checkpoint", ["gemma4", "gemma4_unified-q4"])
def test_a_model_cast_to_float32_is_served_in_float32(tiny_checkpoints, monkeypatch, checkpoint):
    model, processor = load(str(tiny_checkpoints[checkpoint]))
    model.set_dtype(mx.float32)
    inputs = model_inputs(model, processor, "two sizes")
    stock = greedy(model, inputs)
    acceleration = accelerate(model)
    assert acceleration.encoder.dtype == "f32"
    with stock_vision_refused(monkeypatch):
        ours = greedy(model, inputs)
    assert ours[0] == stock[0]
    assert all(np.array_equal(a, b) for a, b in zip(ours[1], stock[1]))


def test_the_gemma4_tower_is_swapped_and_the_projector_is_identity(tiny_checkpoints):
    model, _ = load(str(tiny_checkpoints["gemma4"]))
    stock_tower, stock_projector = model.vision_tower, model.embed_vision
    acceleration = accelerate(model)
    assert isinstance(model.vision_tower, EncoderVisionTower)
    assert model.vision_tower.config is stock_tower.config
    pixels = mx.random.uniform(shape=(1, 3, 36, 48), key=mx.random.key(3))
    ours = model.encode_image(pixels)
    acceleration.restore()
    assert model.vision_tower is stock_tower and model.embed_vision is stock_projector
    theirs = model.encode_image(pixels)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == mx.bfloat16
    assert np.array_equal(np.array(ours.view(mx.uint16)), np.array(theirs.view(mx.uint16)))
