"""Type stubs of the native extension (crates/python/src)."""

import os
from typing import Any, Dict, Iterable, Literal, Optional, Sequence, Tuple, Union

import mlx.core as mx

import numpy as np
import numpy.typing as npt

__version__: str
MLX_BUILD_VERSION: str
"""The MLX release the extension's mlx-c was compiled against: the only libmlx it opens."""

def open_mlx(lib_dir: Union[str, "os.PathLike[str]"]) -> str:
    """Opens MLX from the libmlx in ``lib_dir``; ImportError if it is another MLX release or
    another install is already open. Returns libmlx's version."""

def embed(
    model: Union[str, "os.PathLike[str]"],
    images: Union[str, "os.PathLike[str]"],
    out: Union[str, "os.PathLike[str]"],
    *,
    dtype: Literal["native", "f32", "float32"] = "native",
    max_soft_tokens: Optional[int] = None,
    batch: int = 8,
    shard_size: int = 256,
    workers: Optional[int] = None,
    file_timeout: float = 120.0,
) -> Dict[str, Any]:
    """Embeds a corpus (a directory, a glob pattern or a ``.txt`` list of paths) into shards of
    soft tokens in ``out``, resumably: ``gemma-vision embed``'s job, the same shards bit for bit.
    An image that fails in any way (not an image, refused, a panic, slower to read and decode
    than ``file_timeout`` seconds) is recorded in ``errors.jsonl`` with its ``kind`` and the job
    goes on.
    Returns the run's summary: ``encoded``, ``soft_tokens``, ``failed``, ``skipped``, ``shards``,
    ``seconds``, ``errors_total``, ``model_identity``, ``max_soft_tokens``, ``errors_file``.
    Releases the GIL while it runs."""

def retain_freed_host_memory() -> bool:
    """Keeps freed memory mapped for reuse instead of returning it to the system (glibc's
    ``malloc``: no fresh mapping per large block), process-wide and for good. Returns whether
    the C library accepted it (False where it is not glibc)."""

Image = Union[str, "os.PathLike[str]", bytes, bytearray, npt.NDArray[np.uint8]]
"""A path, the bytes of an image file, or uint8 pixels [H, W, 3] (RGB)."""

class Encoder:
    """A Gemma 4 vision encoder loaded once from a model directory.

    ``encode`` releases the GIL while it decodes and encodes: one encoder may serve several
    threads, and each image's features are the same bits whichever thread or call computes them.
    """

    def __init__(
        self,
        model: Union[str, "os.PathLike[str]"],
        dtype: Literal["native", "f32", "float32"] = "native",
        max_soft_tokens: Optional[int] = None,
    ) -> None:
        """Loads the encoder of ``model``: a model directory, or a Hugging Face Hub repository
        ``"org/name"`` / ``"org/name@revision"`` (found in the Hugging Face cache, else only its
        vision tensors fetched; ``HF_ENDPOINT``, ``HF_HOME``, ``HF_TOKEN`` and
        ``HF_HUB_OFFLINE`` apply). A str naming an existing path is a directory.

        Raises FileNotFoundError (no such directory, config.json, repository, revision or
        file), OSError (unreadable files; the Hub refused access, could not be reached, or
        answered wrongly), ValueError (a config, weights or budget the encoder cannot serve).
        """

    def encode(
        self,
        images: Sequence[Image],
        max_soft_tokens: Optional[int] = None,
        as_float32: bool = False,
    ) -> list[npt.NDArray[np.generic]]:
        """One ``[n_i, D]`` array of soft tokens per image, in input order.

        float32 for float32 encoders; ``ml_dtypes.bfloat16`` (the exact bits) for bf16
        checkpoints, or float32 with ``as_float32=True``. Paths and bytes are decoded with
        their EXIF orientation applied; arrays are used as they are.

        Raises FileNotFoundError (a missing file), OSError (a file that is not a readable
        image), ValueError (bytes that do not decode, an array that is not uint8 [H, W, 3], a
        budget too small for an image), TypeError (an object that is none of these). The
        message is the one ``gemma-vision encode`` prints for the same file.
        """

    @staticmethod
    def matching(
        model_dir: Union[str, "os.PathLike[str]"],
        parameters: Iterable[Tuple[str, "mx.array"]],
    ) -> "Encoder":
        """The encoder of ``model_dir`` whose vision weights are exactly ``parameters`` (every
        vision parameter of an mlx-vlm model loaded from it, by sanitized name), compared in place:
        names, dtype, shape, bytes. A model cast to float32 as a whole gets an "f32" encoder.

        Raises ValueError naming the first parameter that differs; FileNotFoundError, OSError
        and ValueError as the constructor does.
        """

    def encode_pixel_values(
        self,
        pixel_values: Union["mx.array", npt.NDArray[np.float32], Sequence[Any]],
        position_ids: Union["mx.array", npt.NDArray[np.integer], Sequence[Any], None] = None,
    ) -> "mx.array":
        """What mlx-vlm's model computes from its processor's pixel inputs, as an mx.array (pass it
        as ``cached_image_features`` / ``cached_video_features``):

        - gemma4: ``Model.encode_image(pixel_values, position_ids)``, ``[1, Σ soft tokens, D]``:
          pixels ``[B, 3, H, W]`` float32 or a list of images of different sizes; patch rows
          ``[B, L, 3p²]`` or video frames ``[B, T, L, 3p²]`` with int position ids ``[..., 2]``
          (or lists of them, one per video);
        - gemma4_unified: ``Model.get_image_features``, ``[Σ soft tokens, D]``: model patches
          ``[B, N, 3P²]`` or video frames ``[V, T, N, 3P²]`` (flattened as
          ``get_video_features`` does), with position ids or without (no position term, every row).

        Bit for bit mlx-vlm's values, in its dtype. Raises ValueError for inputs of another shape,
        dtype or family. The GIL is released while encoding.
        """

    def encode_video(
        self,
        frames: Union[Sequence[Image], npt.NDArray[np.uint8]],
        max_soft_tokens: Optional[int] = None,
        as_float32: bool = False,
    ) -> list[npt.NDArray[np.generic]]:
        """One ``[n_i, D]`` array per kept frame of one video: what mlx-vlm's video processor and
        video path compute. ``frames``: images as ``encode`` takes them, all of one size (or a
        uint8 array ``[T, H, W, 3]``); at most the video processor's ``num_frames`` (32) are
        kept, sampled uniformly. ``max_soft_tokens``: the budget per frame, 70, 140, 280, 560 or
        1120 (default: the checkpoint's video processor's, else 70)."""

    def inspect(
        self,
        max_soft_tokens: Optional[int] = None,
        image_size: Optional[Tuple[int, int]] = None,
    ) -> Dict[str, Any]:
        """What the encoder makes of its checkpoint, the dict ``gemma-vision inspect --json``
        prints: tower, quantized modules, weight files, budget and its source, tensors read and
        ignored, the cache identity, and with ``image_size`` (width, height) what an image of
        that size becomes."""

    @property
    def identity(self) -> str:
        """The cache identity (SHA-256, hex): equal identities give equal features for equal
        image bytes and budgets."""

    @property
    def model_type(self) -> Literal["gemma4", "gemma4_unified"]: ...
    @property
    def hidden_size(self) -> int:
        """D, the columns of every feature array."""

    @property
    def max_soft_tokens(self) -> int:
        """The default soft-token budget of ``encode``."""

    @property
    def dtype(self) -> Literal["native", "f32"]: ...
    @property
    def model_dir(self) -> "os.PathLike[str]": ...
