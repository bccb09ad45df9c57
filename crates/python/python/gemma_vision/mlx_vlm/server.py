"""mlx-vlm's HTTP server with every Gemma 4 model it loads accelerated.

    python -m gemma_vision.mlx_vlm.server --model path/to/gemma-4-e2b --port 8080

takes mlx-vlm's own command line (``python -m mlx_vlm.server --help``) and runs mlx-vlm's own
server. The one change: the function by which that server loads a model for generation
(``mlx_vlm.server.generation.load_model_resources``, after any adapter) is wrapped to call
``gemma_vision.mlx_vlm.accelerate`` on the model it returns. A model that cannot be accelerated
(another model type, weights that are not the checkpoint's) is served by mlx-vlm's own encoder,
with a warning in the log. ``--reload`` is refused: its worker process would import mlx-vlm's
stock loader.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import Any, Callable, Optional, Sequence

from . import accelerate

logger = logging.getLogger("gemma_vision.mlx_vlm.server")

_WRAPPED = "_gemma_vision_accelerates"


def install() -> None:
    """Wraps mlx-vlm's server-side model loader so that each model it loads is accelerated.
    Idempotent."""
    from mlx_vlm import server
    from mlx_vlm.server import generation

    stock = generation.load_model_resources
    if getattr(stock, _WRAPPED, False):
        return
    wrapped = _accelerating(stock)
    generation.load_model_resources = wrapped
    server.load_model_resources = wrapped


def _accelerating(stock: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(stock)
    def load_model_resources(model_path: str, adapter_path: Optional[str]) -> Any:
        model, processor, config = stock(model_path, adapter_path)
        try:
            acceleration = accelerate(model)
            logger.info("gemma_vision: %s accelerated (dtype %s)", model_path, acceleration.encoder.dtype)
        except ValueError as error:
            logger.warning("gemma_vision: %s not accelerated: %s", model_path, error)
        return model, processor, config

    setattr(load_model_resources, _WRAPPED, True)
    return load_model_resources


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Runs mlx-vlm's server (its command line: ``argv``, default ``sys.argv[1:]``) with
    acceleration installed."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--reload" in args:
        sys.exit("gemma_vision.mlx_vlm.server: --reload runs the server in a fresh process with mlx-vlm's stock loader")
    install()
    from mlx_vlm.server import main as serve

    sys.argv = ["gemma_vision.mlx_vlm.server", *args]
    serve()


if __name__ == "__main__":
    main()
