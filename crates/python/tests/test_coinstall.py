"""The wheel installs beside mlx-vlm: one fresh virtual environment, plain pip, as a user types it.

`cargo xtask test` passes the wheel it built in GEMMA_VISION_WHEEL. The environment is made and
filled by pip alone (`pip install <wheel> mlx-vlm==0.7.10 "mlx[cpu]"`: the resolver must find
one set of versions for both packages), then both import in one interpreter and the package's
features are the bits the `gemma-vision` command writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import bits, image, model, read_safetensors, run

WHEEL = os.environ.get("GEMMA_VISION_WHEEL")


@pytest.mark.skipif(not WHEEL, reason="GEMMA_VISION_WHEEL (the built wheel) is not set")
def test_the_wheel_and_mlx_vlm_install_into_one_fresh_environment(tmp_path, cli):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", WHEEL, "mlx-vlm==0.7.10", "mlx[cpu]"],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr

    reference = tmp_path / "cli.safetensors"
    png = image("tiny-clipped", "noise-20x30.png")
    run(cli, "encode", "--model", model("tiny-clipped"), "--image", png, "--out", reference)
    script = textwrap.dedent(
        f"""
        import importlib.metadata as m
        import mlx.core as mx
        import mlx_vlm
        import numpy as np
        import gemma_vision

        print(m.version("mlx-vlm"), m.version("mlx"), gemma_vision.mlx_version())
        encoder = gemma_vision.Encoder({str(model("tiny-clipped"))!r})
        [features] = encoder.encode([{str(png)!r}])
        np.save({str(tmp_path / "features.npy")!r}, features.view(np.uint16))
        """
    )
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    mlx_vlm_version, mlx_version, libmlx_version = result.stdout.split()
    assert mlx_vlm_version == "0.7.10"
    assert mlx_version == libmlx_version
    import numpy as np

    ours = np.load(tmp_path / "features.npy")
    assert bits(ours) == bits(read_safetensors(reference)["features"])
