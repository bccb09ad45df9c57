"""Shared helpers of the parity oracles: importing mlx-vlm's leaf modules, saving outputs.

mlx-vlm 0.7.10 is installed with --no-deps on the pinned MLX. Its package __init__ files import
heavy dependencies (transformers, ...) that its vision modules never use. `import_reference`
installs a meta-path hook that turns every `mlx_vlm` package into an empty namespace (its
__init__.py is not executed) so that leaf modules such as mlx_vlm.models.gemma4.vision import
with only mlx, numpy and Pillow. Processor helpers that live in modules importing transformers
are loaded from their source by name (`reference_function`), so the reference's exact code
runs, not a re-expression of it.
"""

import argparse
import ast
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

import mlx.core as mx


def _package_dir():
    spec = importlib.util.find_spec("mlx_vlm") if "mlx_vlm" not in sys.modules else None
    if spec is not None and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return os.path.dirname(sys.modules["mlx_vlm"].__path__[0] + "/")


class _NamespaceOnly(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads mlx_vlm packages as empty namespaces; plain modules load normally."""

    def __init__(self, root):
        self.root = root

    def find_spec(self, fullname, path, target=None):
        if fullname != "mlx_vlm" and not fullname.startswith("mlx_vlm."):
            return None
        rel = fullname.split(".")[1:]
        directory = os.path.join(self.root, *rel)
        if os.path.isdir(directory) and os.path.exists(os.path.join(directory, "__init__.py")):
            spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            spec.submodule_search_locations = [directory]
            return spec
        return None

    def create_module(self, spec):
        return types.ModuleType(spec.name)

    def exec_module(self, module):
        module.__path__ = module.__spec__.submodule_search_locations


_installed = False


def import_reference(name):
    """Imports `mlx_vlm.<name>` (e.g. "models.gemma4.vision") without package __init__ files."""
    global _installed
    if not _installed:
        root = _package_dir()
        sys.meta_path.insert(0, _NamespaceOnly(root))
        _installed = True
    return importlib.import_module("mlx_vlm." + name)


def reference_function(module, function_name, namespace=None):
    """Loads one top-level function of `mlx_vlm.<module>` from its source, without importing
    the module (used for processor helpers whose modules import transformers)."""
    path = os.path.join(_package_dir(), *module.split(".")) + ".py"
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function_name:
            code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
            scope = dict(namespace or {})
            exec(code, scope)
            return scope[function_name]
    raise LookupError(f"{function_name} not found in {path}")


def parse_args(description, extra=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="directory to write inputs and outputs into")
    if extra:
        extra(parser)
    args, _unknown = parser.parse_known_args()
    os.makedirs(args.out, exist_ok=True)
    return args


def save(path, tensors, metadata=None):
    """Saves a dict of mx.arrays as safetensors (evaluating them first)."""
    mx.eval(list(tensors.values()))
    mx.save_safetensors(path, tensors, metadata=metadata or {})


def install_transformers_shims():
    """Makes mlx-vlm's processor modules importable without transformers.

    The processors subclass and call a handful of Hugging Face utilities that do no
    arithmetic on the image: a base class, `make_flat_list_of_images`, `valid_images`,
    `to_numpy_array` (np.array of a PIL image), `ChannelDimension`, `fetch_images`. These
    stand-ins provide exactly that, so the reference's own `Gemma4ImageProcessor.preprocess`
    and `Gemma4UnifiedImageProcessor.preprocess` run unchanged.
    """
    import enum
    import numpy as np

    if "transformers" in sys.modules:
        return

    class ChannelDimension(enum.Enum):
        FIRST = "channels_first"
        LAST = "channels_last"

    class _Base:
        def __init__(self, **kwargs):
            for key, value in kwargs.items():
                setattr(self, key, value)

        def fetch_images(self, images):
            return images

    class PILImageResampling(enum.IntEnum):
        NEAREST = 0
        LANCZOS = 1
        BILINEAR = 2
        BICUBIC = 3

    def make_flat_list_of_images(images):
        if isinstance(images, (list, tuple)):
            flat = []
            for item in images:
                flat.extend(make_flat_list_of_images(item))
            return flat
        return [images]

    def infer_channel_dimension_format(image):
        return ChannelDimension.FIRST if image.ndim == 3 and image.shape[0] in (1, 3) else ChannelDimension.LAST

    class _AutoProcessor:
        @classmethod
        def from_pretrained(cls, *args, **kwargs):
            raise RuntimeError("transformers is not installed (parity shims)")

    names = {
        "transformers": {"AutoProcessor": _AutoProcessor},
        "transformers.feature_extraction_utils": {"BatchFeature": dict},
        "transformers.image_processing_utils": {"BaseImageProcessor": _Base},
        "transformers.image_utils": {
            "ChannelDimension": ChannelDimension,
            "ImageInput": object,
            "PILImageResampling": PILImageResampling,
            "infer_channel_dimension_format": infer_channel_dimension_format,
            "make_flat_list_of_images": make_flat_list_of_images,
            "to_numpy_array": lambda image: np.array(image),
            "valid_images": lambda images: True,
        },
        "transformers.processing_utils": {"ProcessorMixin": _Base},
        "transformers.tokenization_utils_base": {"PreTokenizedInput": object, "TextInput": object},
        "transformers.video_processing_utils": {"BaseVideoProcessor": _Base},
    }
    for name, attrs in names.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module


def load_image(path):
    """mlx-vlm's `utils.load_image` for a file path (open, exif_transpose, convert RGB)."""
    from io import BytesIO
    from pathlib import Path
    from typing import Union

    from PIL import Image, ImageOps

    function = reference_function(
        "utils", "load_image", {"Image": Image, "ImageOps": ImageOps, "BytesIO": BytesIO, "Path": Path, "Union": Union}
    )
    return function(str(path))
