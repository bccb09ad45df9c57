"""Prints the directory of the `mlx` package that holds `mlx.core` (the wheel's: its `include/`
and `lib/libmlx`), or nothing without one; MLX itself is not imported. Run as
`python -c <this text>` by build.rs (and `cargo xtask`). `mlx` is a namespace package, so any
folder named `mlx` on `sys.path` (the current directory, MLX's own JIT cache in the temporary
directory) is a portion of it, possibly ahead of the wheel's: only the portion holding
`mlx.core` is the install.
"""

import importlib.util
import os

try:
    spec = importlib.util.find_spec("mlx.core")
except ImportError:  # no `mlx` package at all
    spec = None
print(os.path.dirname(spec.origin) if spec is not None and spec.origin else "")
