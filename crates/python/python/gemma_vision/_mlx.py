"""Opens MLX for the extension at import: the libmlx of the ``mlx`` wheel installed beside it.

The extension holds mlx-c compiled against one MLX release (``_native.MLX_BUILD_VERSION``) and
no link to libmlx; importing the package opens the environment's ``mlx/lib/libmlx`` (the file
``import mlx.core`` loads) and refuses any other release with one ImportError naming both
versions, before anything of mlx-c is loaded.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from . import _native

_LIBMLX = "libmlx.dylib" if sys.platform == "darwin" else "libmlx.so"


def _lib_dir() -> str:
    spec = importlib.util.find_spec("mlx")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ImportError(
            f"gemma_vision needs the MLX wheels (MLX {_native.MLX_BUILD_VERSION}): "
            f"pip install 'mlx[cpu]=={_native.MLX_BUILD_VERSION}'"
        )
    return os.path.join(locations[0], "lib")


_version = _native.open_mlx(_lib_dir())
_library = os.path.realpath(os.path.join(_lib_dir(), _LIBMLX))


def mlx_version() -> str:
    """The version of the libmlx the package runs on (``mlx::core::version()``)."""
    return _version


def mlx_library() -> str:
    """The libmlx file the package runs on: the ``mlx`` wheel's, beside the package."""
    return _library
