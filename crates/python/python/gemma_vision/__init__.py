"""Gemma 4 vision features ("soft tokens") on MLX, bit for bit what mlx-vlm computes.

>>> import gemma_vision
>>> encoder = gemma_vision.Encoder("mlx-community/gemma-4-e2b-it-bf16")  # or a directory
>>> [cat, street] = encoder.encode(["cat.jpg", open("street.png", "rb").read()])
>>> cat.shape, cat.dtype  # (soft tokens, hidden size), bfloat16 for published checkpoints
((280, 1536), dtype(bfloat16))

- ``Encoder``: the encoder, loaded once; ``encode`` releases the GIL, so threads may share it.
- ``embed``: a corpus of images into shards of soft tokens, resumably (``gemma-vision embed``'s
  job); ``read_shards``: the images of such an output directory.
- ``retain_freed_host_memory()``: for a process that mostly encodes, keeps freed memory mapped
  (glibc's ``malloc`` otherwise maps and unmaps every large intermediate, and a batch's page
  faults cost it time). Process-wide and permanent; the Ray job's actors call it, and start
  with ``MALLOC_ARENA_MAX=1`` (a process whose threads already use several ``malloc`` arenas
  needs that too: see ``ray_embed.actor_options``).
- ``mlx_version``, ``mlx_library``: the MLX the package runs on, the libmlx of the ``mlx``
  wheel beside it, opened at import; another MLX release than the one the package was built
  against is refused there with an ImportError naming both.
- ``gemma_vision.ray_embed``: the same job over a Ray cluster (``python -m gemma_vision.ray_embed``).
- ``gemma_vision.mlx_vlm``: mlx-vlm's own generate loop, vision cache and server on this encoder
  (``accelerate(model)``; ``python -m gemma_vision.mlx_vlm.server``); ``Encoder.encode_pixel_values``
  gives ``cached_image_features`` for mlx-vlm's lower levels.
"""

from ._mlx import mlx_library, mlx_version
from ._native import Encoder, __version__, embed, retain_freed_host_memory
from .shards import EmbeddedImage, read_errors, read_shards

__all__ = [
    "Encoder",
    "EmbeddedImage",
    "embed",
    "mlx_library",
    "mlx_version",
    "read_errors",
    "read_shards",
    "retain_freed_host_memory",
    "__version__",
]
