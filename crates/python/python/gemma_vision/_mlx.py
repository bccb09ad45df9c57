"""Opens MLX for the extension at import: the libmlx of the ``mlx`` wheel installed beside it.

The extension holds mlx-c compiled against one MLX release (``_native.MLX_BUILD_VERSION``) and
no link to libmlx; importing the package opens the ``lib/libmlx`` beside the ``mlx.core``
extension module (the file ``import mlx.core`` loads) and refuses any other release with one
ImportError naming both versions, before anything of mlx-c is loaded.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from . import _native

_LIBMLX = "libmlx.dylib" if sys.platform == "darwin" else "libmlx.so"


def _lib_dir() -> str:
    """``lib/`` of the ``mlx`` package portion that holds ``mlx.core``.

    The wheel's ``mlx`` is a namespace package: any folder named ``mlx`` on ``sys.path`` (the
    current directory, a script's, MLX's own CPU JIT cache in the temporary directory) joins it
    as a portion, in ``sys.path`` order. Only the portion holding ``mlx.core`` is the wheel's.
    """
    try:
        spec = importlib.util.find_spec("mlx.core")
    except ImportError:  # no `mlx` package at all
        spec = None
    if spec is None or not spec.origin:
        raise ImportError(
            f"gemma_vision needs the MLX wheels (MLX {_native.MLX_BUILD_VERSION}), and no `mlx.core` "
            f"was found: pip install 'mlx[cpu]=={_native.MLX_BUILD_VERSION}'"
        )
    return os.path.join(os.path.dirname(spec.origin), "lib")


_dir = _lib_dir()
_version = _native.open_mlx(_dir)
_library = os.path.realpath(os.path.join(_dir, _LIBMLX))
del _dir


def mlx_version() -> str:
    """The version of the libmlx the package runs on (``mlx::core::version()``)."""
    return _version


def mlx_library() -> str:
    """The libmlx file the package runs on: the ``mlx`` wheel's, beside ``mlx.core``."""
    return _library
