"""The installed package in a fresh environment, as `cargo xtask test` checks each wheel on each
CPython it tests: `python wheel_smoke.py` (a script, not a pytest module: the environment holds
only what `pip install <wheel> mlx-vlm==0.7.10 "mlx[cpu]"` put there).

On a small random gemma4 checkpoint (tiny_gemma4.py): an image given as a NumPy array encodes to
the rows mlx-vlm's `encode_image` computes from its processor's pixels; `accelerate` (which reads
every vision parameter of mlx-vlm's model in place, through the buffer protocol) installs our
encoder, whose `encode_image` is then the stock one's bits, and `restore` undoes it. Prints the
interpreter, the package's version and libmlx's.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import mlx.core as mx
import numpy as np
from mlx_vlm.prompt_utils import apply_chat_template
from mlx_vlm.utils import load, prepare_inputs
from PIL import Image

import gemma_vision
from gemma_vision.mlx_vlm import acceleration_of, accelerate
from tiny_gemma4 import write_checkpoint


def float32(array: mx.array) -> np.ndarray:
    return np.array(array.astype(mx.float32))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = write_checkpoint(Path(tmp) / "gemma4", "gemma4")
        model, processor = load(str(directory))
        picture = np.random.default_rng(7).integers(0, 256, (40, 56, 3), dtype=np.uint8)
        prompt = apply_chat_template(processor, model.config, "describe the image", num_images=1)
        inputs = prepare_inputs(processor, images=[Image.fromarray(picture)], prompts=prompt)
        pixels, ids = inputs["pixel_values"], inputs.get("image_position_ids")
        stock = float32(model.encode_image(pixels, ids))

        [ours] = gemma_vision.Encoder(directory).encode([picture], as_float32=True)
        assert ours.shape == stock.shape[-2:], (ours.shape, stock.shape)
        assert np.array_equal(ours, stock.reshape(ours.shape)), "encode of a NumPy image differs from mlx-vlm's"

        acceleration = accelerate(model)
        assert acceleration_of(model) is acceleration
        assert np.array_equal(float32(model.encode_image(pixels, ids)), stock), "accelerated encode_image differs"
        acceleration.restore()
        assert acceleration_of(model) is None

    version = sys.version_info
    print(f"wheel smoke: CPython {version.major}.{version.minor}.{version.micro}, gemma_vision "
          f"{gemma_vision.__version__}, libmlx {gemma_vision.mlx_version()}: ok")


if __name__ == "__main__":
    main()
