"""`gemma_vision.Encoder` against the `gemma-vision encode` command on the checked-in tiny
checkpoints: the same bits, the same messages, several threads on one encoder."""

from __future__ import annotations

import concurrent.futures
import json
import sys
import threading

import ml_dtypes
import numpy as np
import pytest
from PIL import Image

import gemma_vision
from conftest import bits, image, model, read_safetensors, run

CASES = [
    # (case, budget, images, dtype)
    ("tiny-clipped", 6, ["gradient-37x23.png", "checker-20x30.png", "noise-20x30.png"], "native"),
    ("tiny-clipped", 6, ["gradient-37x23.png", "noise-20x30.png"], "f32"),
    ("tiny-unified", 20, ["gradient-37x23.png", "checker-20x30.png"], "native"),
    ("tiny-f32", 6, ["gradient-37x23.png"], "native"),
]


@pytest.mark.parametrize("case,budget,names,dtype", CASES)
def test_encode_is_bit_identical_to_the_command(cli, tmp_path, case, budget, names, dtype):
    paths = [image(case, name) for name in names]
    out = tmp_path / "features.safetensors"
    args = ["encode", "--model", model(case), "--max-soft-tokens", budget, "--dtype", dtype, "--out", out]
    for path in paths:
        args += ["--image", path]
    run(cli, *args)
    expected = read_safetensors(out)

    encoder = gemma_vision.Encoder(model(case), dtype=dtype)
    features = encoder.encode([str(p) for p in paths], max_soft_tokens=budget)
    assert [f.shape[0] for f in features] == expected["soft_tokens"].tolist()
    assert all(f.shape[1] == encoder.hidden_size for f in features)
    stored = expected["features"]
    assert features[0].dtype == (ml_dtypes.bfloat16 if stored.dtype == np.uint16 else np.float32)
    assert b"".join(bits(f) for f in features) == bits(stored)


def test_paths_bytes_arrays_and_pathlikes_give_the_same_bits():
    encoder = gemma_vision.Encoder(model("tiny-clipped"), max_soft_tokens=6)
    path = image("tiny-clipped", "noise-20x30.png")
    pixels = np.asarray(Image.open(path).convert("RGB"))
    via_path, via_pathlike, via_bytes, via_array = encoder.encode([str(path), path, path.read_bytes(), pixels])
    for other in (via_pathlike, via_bytes, via_array):
        assert bits(other) == bits(via_path)
    # A non-contiguous view is read as the pixels it shows.
    assert bits(encoder.encode([np.asfortranarray(pixels)])[0]) == bits(via_path)
    assert encoder.encode([]) == []


def test_features_are_bfloat16_bits_or_float32_on_request():
    encoder = gemma_vision.Encoder(model("tiny-clipped"))
    path = str(image("tiny-clipped", "checker-20x30.png"))
    [native] = encoder.encode([path], max_soft_tokens=6)
    [wide] = encoder.encode([path], max_soft_tokens=6, as_float32=True)
    assert native.dtype == ml_dtypes.bfloat16 and wide.dtype == np.float32
    assert bits(native.astype(np.float32)) == bits(wide)
    assert native.flags.writeable and native.flags.c_contiguous


def test_the_budget_comes_from_the_call_then_the_constructor_then_the_checkpoint():
    path = str(image("tiny-clipped", "gradient-37x23.png"))
    default = gemma_vision.Encoder(model("tiny-clipped"))
    assert default.max_soft_tokens > 0
    small = gemma_vision.Encoder(model("tiny-clipped"), max_soft_tokens=6)
    assert small.max_soft_tokens == 6
    assert bits(small.encode([path])[0]) == bits(default.encode([path], max_soft_tokens=6)[0])
    assert bits(small.encode([path], max_soft_tokens=default.max_soft_tokens)[0]) == bits(default.encode([path])[0])


def test_identity_and_facts():
    native = gemma_vision.Encoder(model("tiny-clipped"))
    assert len(native.identity) == 64 and native.identity == gemma_vision.Encoder(model("tiny-clipped")).identity
    assert gemma_vision.Encoder(model("tiny-clipped"), dtype="f32").identity != native.identity
    assert (native.model_type, native.hidden_size, native.dtype) == ("gemma4", 48, "native")
    assert gemma_vision.Encoder(model("tiny-unified")).model_type == "gemma4_unified"
    assert "tiny-clipped" in repr(native)


@pytest.mark.parametrize("case", ["q-legacy-affine4", "tiny-unified"])
def test_inspect_is_the_commands_json(cli, case):
    command = json.loads(run(cli, "inspect", "--model", model(case), "--image-size", "640x480", "--json").stdout)
    encoder = gemma_vision.Encoder(model(case))
    assert encoder.inspect(image_size=(640, 480)) == command
    small = encoder.inspect(max_soft_tokens=70)
    assert small["budget"]["max_soft_tokens"] == 70 and small["budget"]["source"] == "flag"
    assert small["cache_identity"] == encoder.identity
    with pytest.raises(ValueError, match="image_size width"):
        encoder.inspect(image_size=(0, 480))


def test_four_threads_sharing_one_encoder_get_one_threads_bits():
    encoder = gemma_vision.Encoder(model("tiny-clipped"), max_soft_tokens=6)
    paths = [str(image("tiny-clipped", n)) for n in ["gradient-37x23.png", "checker-20x30.png", "noise-20x30.png"]]
    expected = [bits(f) for f in encoder.encode(paths)]
    start = threading.Barrier(4)

    def work(_):
        start.wait()
        return [[bits(f) for f in encoder.encode(paths)] for _ in range(20)]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for rounds in pool.map(work, range(4)):
            assert all(result == expected for result in rounds)


def test_the_gil_is_released_while_encoding():
    encoder = gemma_vision.Encoder(model("tiny-clipped"), max_soft_tokens=6)
    paths = [str(image("tiny-clipped", "noise-20x30.png"))] * 64
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
        encoder.encode(paths)
        seen = ticks - before
    finally:
        done.set()
        counter.join()
        sys.setswitchinterval(0.005)
    assert seen > 0, "no other thread ran while encode was running"


def command_error(cli, tmp_path, *args) -> str:
    result = run(cli, *args, "--out", tmp_path / "never.safetensors", check=False)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    return line.removeprefix("error: ")


def test_errors_are_exceptions_with_the_commands_messages(cli, tmp_path):
    encoder = gemma_vision.Encoder(model("tiny-clipped"), max_soft_tokens=6)
    missing = tmp_path / "missing.png"
    not_an_image = tmp_path / "notes.png"
    not_an_image.write_text("just text")
    for path, exception in [(missing, FileNotFoundError), (not_an_image, OSError)]:
        with pytest.raises(exception) as raised:
            encoder.encode([str(image("tiny-clipped", "noise-20x30.png")), str(path)])
        expected = command_error(cli, tmp_path, "encode", "--model", model("tiny-clipped"), "--image", path)
        assert str(raised.value) == expected
    assert not isinstance(raised.value, FileNotFoundError)

    with pytest.raises(FileNotFoundError) as raised:
        gemma_vision.Encoder(tmp_path / "no-model")
    expected = command_error(
        cli, tmp_path, "encode", "--model", tmp_path / "no-model", "--image", image("tiny-clipped", "noise-20x30.png")
    )
    assert str(raised.value) == expected


def test_bad_inputs_are_value_or_type_errors():
    encoder = gemma_vision.Encoder(model("tiny-clipped"), max_soft_tokens=6)
    good = str(image("tiny-clipped", "noise-20x30.png"))
    with pytest.raises(ValueError, match="image 1: unrecognised image format"):
        encoder.encode([good, b"not an image"])
    with pytest.raises(ValueError, match=r"image 0: expected a uint8 array of shape \[H, W, 3\], got float32"):
        encoder.encode([np.zeros((4, 4, 3), np.float32)])
    with pytest.raises(ValueError, match="got uint8 of shape"):
        encoder.encode([np.zeros((4, 4), np.uint8)])
    with pytest.raises(TypeError, match="image 0: expected a path"):
        encoder.encode([42])
    with pytest.raises(TypeError, match="a list of images"):
        encoder.encode(good)
    with pytest.raises(ValueError, match="max_soft_tokens: a budget of 0 soft tokens: it must be at least 1"):
        encoder.encode([good], max_soft_tokens=0)
    with pytest.raises(ValueError, match="dtype must be"):
        gemma_vision.Encoder(model("tiny-clipped"), dtype="f16")
    with pytest.raises(ValueError, match=r"attention over an image at a budget of 1000000 soft tokens \(up to 9000000 patches\)"):
        encoder.encode([good], max_soft_tokens=10**6)



@pytest.mark.parametrize("case", ["tiny-clipped", "tiny-unified"])
def test_encode_video_is_the_commands_frames(cli, tmp_path, case):
    frames = [image(case, name) for name in ("gradient-37x23.png", "checker-37x23.png", "noise-37x23.png")]
    out = tmp_path / "video.safetensors"
    run(cli, "encode", "--model", model(case), "--frames", *frames, "--out", out)
    expected = read_safetensors(out)
    encoder = gemma_vision.Encoder(model(case))
    features = encoder.encode_video([str(p) for p in frames])
    # The fixtures' video processor keeps 2 of 3 frames.
    assert [f.shape[0] for f in features] == expected["soft_tokens"].tolist() and len(features) == 2
    assert b"".join(bits(f) for f in features) == bits(expected["features"])
    # A uint8 array [T, H, W, 3] is the same video.
    video = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in frames])
    assert b"".join(bits(f) for f in encoder.encode_video(video)) == bits(expected["features"])
    with pytest.raises(ValueError, match=r"a video's budget of 6 soft tokens per frame: it must be one of \[70, 140, 280, 560, 1120\]"):
        encoder.encode_video(frames, max_soft_tokens=6)
    with pytest.raises(ValueError, match="share one size"):
        encoder.encode_video([frames[0], image(case, "checker-20x30.png")])
