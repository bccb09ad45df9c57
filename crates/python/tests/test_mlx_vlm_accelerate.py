"""`gemma_vision.mlx_vlm.accelerate` around the generate loop: models it refuses are left exactly
as they were, a second call and `restore` behave, mlx-vlm's vision cache (`stream_generate` with a
`VisionFeatureCache`) runs on our encoder, and `Encoder.encode_pixel_values` is the stock
`encode_image`, usable as `cached_image_features`, with the GIL released."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx.utils import tree_flatten
from mlx_vlm.generate import stream_generate
from mlx_vlm.prompt_utils import apply_chat_template
from mlx_vlm.utils import load, prepare_inputs
from mlx_vlm.vision_cache import VisionFeatureCache

import gemma_vision
from gemma_vision.mlx_vlm import accelerate, acceleration_of, restore
from test_mlx_vlm_generate import greedy, images, model_inputs, stock_vision_refused


def state(model: nn.Module) -> tuple:
    """Everything `accelerate` may touch: the model's attributes (by identity) and parameters."""
    attributes = {k: id(v) for k, v in model.items()} | {k: id(v) for k, v in vars(model).items()}
    parameters = {k: (id(v), v.dtype, v.shape) for k, v in tree_flatten(model.parameters())}
    return attributes, parameters


def restored_state(model: nn.Module) -> tuple:
    """What `restore` gives back: the model's attributes (by identity) and its parameters' values
    (the vision weights are read again from the checkpoint, into new arrays)."""
    attributes = {k: id(v) for k, v in model.items() if not isinstance(v, mx.array)}
    attributes |= {k: id(v) for k, v in vars(model).items()}
    parameters = {k: (v.dtype, v.shape, np.array(v.reshape(-1).view(mx.uint8)).tobytes()) for k, v in tree_flatten(model.parameters())}
    return attributes, parameters


def refused(model: nn.Module, model_dir=None) -> str:
    before = state(model)
    with pytest.raises(ValueError) as error:
        accelerate(model, model_dir)
    assert state(model) == before, "a refused model is left as it was"
    assert acceleration_of(model) is None
    return str(error.value)


def test_models_it_cannot_serve_are_refused_and_left_as_they_were(tiny_checkpoints):
    other = nn.Linear(2, 2)
    other.model_type = "qwen2_vl"
    assert "accelerates gemma4 and gemma4_unified models; this one is 'qwen2_vl'" in refused(other)

    model, _ = load(str(tiny_checkpoints["gemma4"]))
    # Another checkpoint of the family: its projector is quantized.
    message = refused(model, tiny_checkpoints["gemma4-q4"])
    assert "`embed_vision.embedding_projection.weight` is not the checkpoint's" in message, message
    # One parameter changed by a single bit.
    weight = model.vision_tower.encoder.layers[1].mlp.down_proj.linear.weight
    bits = np.array(weight.view(mx.uint16))
    bits.flat[5] ^= 1
    model.vision_tower.encoder.layers[1].mlp.down_proj.linear.weight = mx.array(bits).view(mx.bfloat16)
    message = refused(model)
    assert "vision_tower.encoder.layers.1.mlp.down_proj.linear.weight" in message and "values differ" in message
    # Cast in part.
    model, _ = load(str(tiny_checkpoints["gemma4"]))
    model.embed_vision.set_dtype(mx.float32)
    assert "as a whole" in refused(model)
    # Another family's checkpoint; no vision tower (mlx-vlm drops modules a checkpoint lacks).
    model, _ = load(str(tiny_checkpoints["gemma4"]))
    assert "is not the checkpoint's" in refused(model, tiny_checkpoints["gemma4_unified"])
    model.vision_tower = None
    assert "has no vision tower" in refused(model)
    unified, _ = load(str(tiny_checkpoints["gemma4_unified"]))
    unified.vision_embedder = None
    assert "has no vision tower" in refused(unified)
    # No directory known.
    model, _ = load(str(tiny_checkpoints["gemma4"]))
    del model.model_path
    assert "pass model_dir" in refused(model)
    with pytest.raises(FileNotFoundError):
        accelerate(model, "/nonexistent/checkpoint")
    assert acceleration_of(model) is None


@pytest.mark.parametrize("checkpoint", ["gemma4", "gemma4_unified"])
def test_a_second_call_keeps_the_acceleration_and_restore_undoes_it(tiny_checkpoints, checkpoint):
    model, _ = load(str(tiny_checkpoints[checkpoint]))
    stock = restored_state(model)
    first = accelerate(model)
    assert accelerate(model) is first
    assert accelerate(model, tiny_checkpoints[checkpoint]) is first
    # A second call with another directory is refused and keeps the first acceleration.
    with pytest.raises(ValueError, match="restore"):
        accelerate(model, tiny_checkpoints[f"{checkpoint}-q4"])
    assert acceleration_of(model) is first
    first.restore()
    assert restored_state(model) == stock and acceleration_of(model) is None
    first.restore()
    restore(model)
    assert restored_state(model) == stock
    again = accelerate(model)
    assert again is not first and acceleration_of(model) is again
    restore(model)
    assert restored_state(model) == stock


@pytest.mark.parametrize("checkpoint", ["gemma4", "gemma4_unified-q4"])
def test_the_vision_cache_path_runs_on_our_encoder(tiny_checkpoints, tmp_path, monkeypatch, checkpoint):
    model, processor = load(str(tiny_checkpoints[checkpoint]))
    paths = []
    for i, picture in enumerate(images([(56, 40), (30, 30)])):
        paths.append(str(tmp_path / f"{i}.png"))
        picture.save(paths[-1])
    prompt = apply_chat_template(processor, model.config, "describe the image", num_images=2)

    def run(cache: VisionFeatureCache) -> list[int]:
        steps = stream_generate(model, processor, prompt, image=paths, vision_cache=cache, max_tokens=8, temperature=0.0)
        return [step.token for step in steps]

    stock_cache = VisionFeatureCache()
    stock = run(stock_cache)
    acceleration = accelerate(model)
    cache = VisionFeatureCache()
    with stock_vision_refused(monkeypatch):
        assert run(cache) == stock
        assert run(cache) == stock, "a cache hit"
    assert len(cache) == len(stock_cache) == 1
    [(key, ours)], [(stock_key, theirs)] = cache._cache.items(), stock_cache._cache.items()
    assert key == stock_key and ours.shape == theirs.shape and ours.dtype == theirs.dtype
    assert np.array_equal(np.array(ours.astype(mx.float32)), np.array(theirs.astype(mx.float32)))
    acceleration.restore()


@pytest.mark.parametrize("checkpoint", ["gemma4", "gemma4_unified"])
def test_encode_pixel_values_is_encode_image_and_serves_as_cached_features(tiny_checkpoints, checkpoint):
    model, processor = load(str(tiny_checkpoints[checkpoint]))
    encoder = gemma_vision.Encoder(tiny_checkpoints[checkpoint])
    for case in ("one image", "two sizes", "video"):
        inputs = model_inputs(model, processor, case)
        key = "pixel_values_videos" if case == "video" else "pixel_values"
        ids = inputs.get("video_position_ids" if case == "video" else "image_position_ids")
        ours = encoder.encode_pixel_values(inputs[key], ids)
        if case == "video" and checkpoint == "gemma4_unified":
            theirs = model.get_video_features(inputs[key], ids)
        else:
            theirs = model.encode_image(inputs[key], ids)
        assert isinstance(ours, mx.array) and ours.shape == theirs.shape and ours.dtype == theirs.dtype, case
        assert np.array_equal(np.array(ours.astype(mx.float32)), np.array(theirs.astype(mx.float32))), case
        if case == "two sizes":
            stock = greedy(model, inputs)
            cached = dict(inputs, cached_image_features=ours)
            assert greedy(model, cached)[0] == stock[0]
    # Without ids, as the vision cache calls gemma4_unified's encode_image: every row.
    if checkpoint == "gemma4_unified":
        pixels = model_inputs(model, processor, "one image")["pixel_values"]
        ours, theirs = encoder.encode_pixel_values(pixels), model.encode_image(pixels)
        assert ours.shape == theirs.shape == (280, 64)
        assert np.array_equal(np.array(ours), np.array(theirs))


def test_encode_pixel_values_refuses_inputs_of_another_shape_dtype_or_family(tiny_checkpoints):
    gemma4 = gemma_vision.Encoder(tiny_checkpoints["gemma4"])
    unified = gemma_vision.Encoder(tiny_checkpoints["gemma4_unified"])
    pixels = mx.zeros((1, 3, 48, 48))
    cases = [
        (gemma4, (pixels.astype(mx.bfloat16),), "pixel_values: expected float32 values, found bfloat16"),
        (gemma4, (mx.zeros((3, 48, 48)),), "pixel_values: expected [B, 3, H, W], found [3, 48, 48]"),
        (gemma4, (mx.zeros((1, 630, 48)), mx.zeros((1, 630, 3), dtype=mx.int64)), "position ids: expected [1, 630, 2]"),
        (gemma4, (mx.zeros((1, 630, 48)), mx.zeros((1, 630, 2))), "expected int64 or int32 values, found float32"),
        (gemma4, ([pixels], pixels), "a list of pixel values takes a list of position ids"),
        (unified, (pixels,), "expected [B, L, 6912] (or [B, T, L, 6912]), found [1, 3, 48, 48]"),
        (unified, ([mx.zeros((1, 280, 6912))],), "gemma4_unified takes one array of model patches"),
        (gemma4, ("pixels",), "pixel_values: expected float32 values, found"),
    ]
    for encoder, args, message in cases:
        with pytest.raises(ValueError) as error:
            encoder.encode_pixel_values(*args)
        assert message in str(error.value), (args, str(error.value))


def test_encoder_matching_names_what_differs(tiny_checkpoints: dict[str, Path]):
    model, _ = load(str(tiny_checkpoints["gemma4-q4"]))
    parameters = [(f"embed_vision.{k}", v) for k, v in tree_flatten(model.embed_vision.parameters())]
    parameters += [(f"vision_tower.{k}", v) for k, v in tree_flatten(model.vision_tower.parameters())]
    encoder = gemma_vision.Encoder.matching(tiny_checkpoints["gemma4-q4"], parameters)
    assert (encoder.model_type, encoder.dtype) == ("gemma4", "native")
    with pytest.raises(ValueError, match="embed_vision.embedding_projection.scales"):
        gemma_vision.Encoder.matching(tiny_checkpoints["gemma4-q4"], [p for p in parameters if not p[0].endswith("scales")])
    with pytest.raises(TypeError, match="not an mx.array"):
        gemma_vision.Encoder.matching(tiny_checkpoints["gemma4-q4"], [("vision_tower.x", 3)])


def test_the_gil_is_released_while_encoding_pixel_values(tiny_checkpoints):
    encoder = gemma_vision.Encoder(tiny_checkpoints["gemma4"])
    pixels = mx.random.uniform(shape=(32, 3, 48, 48), key=mx.random.key(5))
    mx.eval(pixels)
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    sys.setswitchinterval(1.0)  # a thread holding the GIL would keep it for a second
    try:
        counter.start()
        before = ticks
        mx.eval(encoder.encode_pixel_values(pixels))
        seen = ticks - before
    finally:
        done.set()
        counter.join()
        sys.setswitchinterval(0.005)
    assert seen > 0, "no other thread ran while encode_pixel_values was running"


def test_a_failure_inside_the_encoder_reaches_mlx_vlm_as_an_exception(tiny_checkpoints):
    """mlx-vlm's server turns an `Exception` of a request into its HTTP error; a `BaseException`
    (pyo3's `PanicException`) would end its generation thread. The encoder's own errors are
    exceptions, and whatever else comes out of it is raised as `RuntimeError`."""
    from gemma_vision.mlx_vlm import EncoderVisionTower

    encoder = gemma_vision.Encoder(tiny_checkpoints["gemma4"])
    tower = EncoderVisionTower(encoder, nn.Identity())
    with pytest.raises(ValueError, match=r"expected \[B, 3, H, W\]"):
        tower(mx.zeros((3, 48, 48)))

    class Panic(BaseException):
        pass

    class Panicking:
        def encode_pixel_values(self, pixel_values, position_ids=None):
            raise Panic("called `Option::unwrap()` on a `None` value")

    with pytest.raises(RuntimeError, match="unwrap"):
        EncoderVisionTower(Panicking(), nn.Identity())(mx.zeros((1, 3, 4, 4)))


def vision_parameters(model: nn.Module, names: tuple[str, ...]) -> dict:
    return {f"{name}.{k}": v for name in names for k, v in tree_flatten(model[name].parameters())}


@pytest.mark.parametrize("checkpoint", ["gemma4", "gemma4_unified-q4"])
@pytest.mark.parametrize("dtype", [None, mx.float32])
def test_the_vision_weights_are_held_once_and_restore_reads_them_again(tiny_checkpoints, checkpoint, dtype):
    """Once accelerated, mlx-vlm's vision modules hold no weights (our encoder holds them): MLX's
    active memory does not grow by the encoder's copy. `restore` reads them back, the same bits in
    the dtypes the model held (a model cast to float32 as a whole too), and the model generates
    what it generated before."""
    model, processor = load(str(tiny_checkpoints[checkpoint]))
    if dtype is not None:
        model.set_dtype(dtype)
    names = ("vision_tower", "embed_vision") if checkpoint == "gemma4" else ("vision_embedder", "embed_vision")
    modules = {name: model[name] for name in names}
    mx.eval(model.parameters())
    stock = restored_state(model)
    held = sum(v.nbytes for v in vision_parameters(model, names).values())
    inputs = model_inputs(model, processor, "one image")
    tokens = greedy(model, inputs)[0]

    mx.clear_cache()
    before = mx.get_active_memory()
    acceleration = accelerate(model)
    after = mx.get_active_memory()
    assert all(v.size == 0 for v in tree_flatten([m.parameters() for m in modules.values()]) for v in [v[1]])
    # Without the release, the encoder's copy comes on top: `after - before` would be `held`.
    assert after - before < held // 2, (before, after, held)
    assert greedy(model, inputs)[0] == tokens

    acceleration.restore()
    assert {name: model[name] for name in names} == modules and all(model[n] is modules[n] for n in names)
    assert restored_state(model) == stock
    assert greedy(model, inputs)[0] == tokens
