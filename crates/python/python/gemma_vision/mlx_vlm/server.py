"""mlx-vlm's HTTP server with every Gemma 4 model it loads accelerated.

    python -m gemma_vision.mlx_vlm.server --model path/to/gemma-4-e2b --port 8080

takes mlx-vlm's own command line (``python -m mlx_vlm.server --help``) and runs mlx-vlm's own
server. The one change: the function by which that server loads a model for generation
(``mlx_vlm.server.generation.load_model_resources``, after any adapter) is wrapped to call
``gemma_vision.mlx_vlm.accelerate`` on the model it returns. A model whose acceleration fails,
whatever the failure (another model type, weights that are not the checkpoint's, checkpoint files
our encoder cannot read, an error inside MLX), is served by mlx-vlm's own encoder, with one
warning line in the log naming the failure. ``--reload``, in any spelling mlx-vlm's command line
accepts (``--relo``), is refused with exit status 2 before the server starts: its worker process
would import mlx-vlm's stock loader.
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
        except Exception as error:
            logger.warning("gemma_vision: %s not accelerated, mlx-vlm's own encoder serves it (%s: %s)", model_path,
                           type(error).__name__, error)
        else:
            logger.info("gemma_vision: %s accelerated (dtype %s)", model_path, acceleration.encoder.dtype)
        return model, processor, config

    setattr(load_model_resources, _WRAPPED, True)
    return load_model_resources


_RELOAD_REFUSED = "gemma_vision.mlx_vlm.server: --reload runs the server in a fresh process with mlx-vlm's stock loader"


class _UvicornWithoutReload:
    """``uvicorn`` as mlx-vlm's command line sees it, except that ``run(..., reload=True)``, which
    that command line asks for when its parser read ``--reload`` in any spelling it accepts,
    exits with status 2 and says why, before anything starts."""

    def __init__(self, uvicorn: Any):
        self._uvicorn = uvicorn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._uvicorn, name)

    def run(self, app: Any, **kwargs: Any) -> Any:
        if kwargs.get("reload"):
            print(_RELOAD_REFUSED, file=sys.stderr)
            sys.exit(2)
        return self._uvicorn.run(app, **kwargs)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Runs mlx-vlm's server (its command line: ``argv``, default ``sys.argv[1:]``, parsed by
    mlx-vlm's own parser) with acceleration installed and ``--reload`` refused."""
    args = list(sys.argv[1:] if argv is None else argv)
    install()
    from mlx_vlm.server import cli
    from mlx_vlm.server import main as serve

    if not isinstance(cli.uvicorn, _UvicornWithoutReload):
        cli.uvicorn = _UvicornWithoutReload(cli.uvicorn)
    sys.argv = ["gemma_vision.mlx_vlm.server", *args]
    serve()


if __name__ == "__main__":
    main()
