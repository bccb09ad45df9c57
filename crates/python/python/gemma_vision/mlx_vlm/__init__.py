"""mlx-vlm's Gemma 4 models on gemma_vision's encoder: the same features, hence the same tokens.

>>> from mlx_vlm import load, generate
>>> from gemma_vision.mlx_vlm import accelerate
>>> model, processor = load("path/to/gemma-4-e2b")
>>> acceleration = accelerate(model)      # checks the weights, then swaps the vision modules
>>> generate(model, processor, prompt, image=["cat.jpg"])  # mlx-vlm's own loop, our encoder
>>> acceleration.restore()                # mlx-vlm's own modules back

``accelerate(model, model_dir=None)`` takes a model from mlx-vlm's ``load`` / ``load_model``
(gemma4 or gemma4_unified) and the directory it was loaded from (default: the ``model_path``
``load_model`` records). It compares every vision parameter the model holds with the
checkpoint's (names, dtypes, shapes, bytes; a model cast to float32 as a whole is served in
float32) and refuses, leaving the model as it was, a model it cannot serve. Then:

- gemma4: ``model.vision_tower`` becomes a module computing the tower *and* the projector on our
  encoder, ``model.embed_vision`` the identity, so that mlx-vlm's ``get_input_embeddings``
  (images, video frames, lists of images of different sizes), ``encode_image`` and with it the
  vision cache run on ours, with mlx-vlm's own code around them;
- gemma4_unified: the model's ``get_image_features``, which ``get_video_features``,
  ``encode_image`` and ``get_input_embeddings`` call, is ours.

The vision weights are held once, by our encoder: once it is installed, the arrays of
mlx-vlm's own vision modules are released (each parameter becomes an empty array of its dtype),
and ``restore`` reads them again from the checkpoint, through mlx-vlm's own loader
(``mlx_vlm.utils.load_model``, lazily: only the vision tensors are read), in the dtypes the model
held. A second ``accelerate`` of the same model and directory returns its acceleration; with
another directory it raises ValueError (``restore`` first). ``restore`` undoes it.
``python -m gemma_vision.mlx_vlm.server`` is mlx-vlm's server with every model it loads
accelerated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_map, tree_unflatten

from .._native import Encoder

__all__ = ["Acceleration", "accelerate", "acceleration_of", "restore"]

_ATTRIBUTE = "_gemma_vision_acceleration"
# The modules holding each family's vision parameters, under their sanitized names.
_VISION_MODULES = {
    "gemma4": ("vision_tower", "embed_vision"),
    "gemma4_unified": ("vision_embedder", "embed_vision"),
}


class EncoderVisionTower(nn.Module):
    """Stands in for a gemma4 model's ``vision_tower``: returns what ``vision_tower`` followed by
    ``embed_vision`` returns (``[1, Σ soft tokens, text_hidden]``), computed by our encoder from
    the same inputs (pixels, a list of images, patch rows or video frames with their ids). The
    model's ``embed_vision`` is the identity meanwhile."""

    def __init__(self, encoder: Encoder, stock: nn.Module):
        super().__init__()
        self._encoder = encoder
        self.config = getattr(stock, "config", None)
        self.model_type = getattr(stock, "model_type", None)

    def __call__(self, pixel_values: Any, pixel_position_ids: Any = None) -> mx.array:
        return _encode(self._encoder, pixel_values, pixel_position_ids)


def _encode(encoder: Encoder, pixel_values: Any, position_ids: Any) -> mx.array:
    """``encoder.encode_pixel_values``, any failure raised as an ``Exception``: mlx-vlm's server
    turns an ``Exception`` of a request's generation into that request's HTTP error and goes on,
    while a ``BaseException`` that is not one (pyo3's ``PanicException``, should a panic ever get
    past the extension's own guard) would end its generation thread and stall every request
    after it."""
    try:
        return encoder.encode_pixel_values(pixel_values, position_ids)
    except Exception:
        raise
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as error:
        raise RuntimeError(f"gemma_vision: encoding failed: {error}") from error


@dataclass
class Acceleration:
    """What ``accelerate`` changed on a model: the encoder it installed, the model's own
    attributes, put back by ``restore``, and its vision modules, whose weights were released
    (``_dtypes``: each parameter's dtype, by module and name)."""

    model: nn.Module
    encoder: Encoder
    model_dir: Path
    _stock: dict = field(repr=False)
    _modules: dict = field(repr=False)
    _dtypes: dict = field(repr=False)

    def restore(self) -> None:
        """Puts the model's own vision modules (or method) back, their weights read again from
        ``model_dir`` as mlx-vlm reads them; the model then computes exactly what mlx-vlm loaded
        computes. A second call does nothing. Raises what mlx-vlm's loader raises for a
        checkpoint it can no longer read (the model stays accelerated), RuntimeError for one
        whose vision parameters are not those the model held."""
        if getattr(self.model, _ATTRIBUTE, None) is not self:
            return
        _reload_weights(self.model_dir, self._modules, self._dtypes)
        self._put_back()

    def _put_back(self) -> None:
        for name, value in self._stock.items():
            if value is _ABSENT:
                self.model.__dict__.pop(name, None)
            else:
                setattr(self.model, name, value)
        if _ATTRIBUTE in self.model.__dict__:
            delattr(self.model, _ATTRIBUTE)


_ABSENT = object()


def acceleration_of(model: nn.Module) -> Optional[Acceleration]:
    """The model's acceleration, or None."""
    return getattr(model, _ATTRIBUTE, None)


def restore(model: nn.Module) -> None:
    """Undoes ``accelerate`` on ``model`` (nothing if it is not accelerated)."""
    acceleration = acceleration_of(model)
    if acceleration is not None:
        acceleration.restore()


def accelerate(model: nn.Module, model_dir: Union[str, "os.PathLike[str]", None] = None) -> Acceleration:
    """Runs ``model``'s vision encoder on gemma_vision's, bit for bit. See the module docs.

    ``model_dir`` is the checkpoint the model was loaded from (default: ``model.model_path``,
    which mlx-vlm's ``load_model`` sets). Raises ValueError, leaving the model as it was, for a
    model that is not gemma4 / gemma4_unified, has no vision tower, or whose vision weights are
    not that checkpoint's (naming the first that differs); FileNotFoundError for a missing
    directory.
    """
    model_type = getattr(model, "model_type", None) or getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in _VISION_MODULES:
        raise ValueError(f"gemma_vision accelerates gemma4 and gemma4_unified models; this one is {model_type!r}")
    current = acceleration_of(model)
    stock = current._stock if current is not None else _stock_attributes(model, model_type)
    modules = {name: stock.get(name, getattr(model, name, None)) for name in _VISION_MODULES[model_type]}
    missing = [name for name, module in modules.items() if module is None]
    if missing:
        raise ValueError(f"the {model_type} model has no vision tower: {', '.join(missing)} is None")
    if model_dir is None:
        model_dir = getattr(model, "model_path", None)
        if model_dir is None:
            raise ValueError("the model does not say where it was loaded from: pass model_dir")
    model_dir = Path(model_dir)
    if current is not None:
        if _same_directory(current.model_dir, model_dir):
            return current
        raise ValueError(f"the model is accelerated from {current.model_dir}: restore() it before accelerating it from {model_dir}")

    parameters = [
        (f"{name}.{key}", value) for name, module in modules.items() for key, value in tree_flatten(module.parameters())
    ]
    encoder = Encoder.matching(model_dir, parameters)
    del parameters
    if encoder.model_type != model_type:
        raise ValueError(f"{model_dir} holds a {encoder.model_type} checkpoint; the model is {model_type}")

    dtypes = {name: {key: value.dtype for key, value in tree_flatten(module.parameters())} for name, module in modules.items()}
    acceleration = Acceleration(model=model, encoder=encoder, model_dir=model_dir, _stock=stock, _modules=modules,
                                _dtypes=dtypes)
    try:
        for name, value in _accelerated_attributes(model_type, encoder, modules).items():
            setattr(model, name, value)
        setattr(model, _ATTRIBUTE, acceleration)
    except BaseException:
        acceleration._put_back()
        raise
    _release_weights(modules)
    return acceleration


def _stock_attributes(model: nn.Module, model_type: str) -> dict:
    """The attributes ``accelerate`` replaces, as the model holds them (``_ABSENT``: no instance
    attribute, the class's method)."""
    if model_type == "gemma4":
        return {name: getattr(model, name, None) for name in _VISION_MODULES[model_type]}
    return {"get_image_features": model.__dict__.get("get_image_features", _ABSENT)}


def _accelerated_attributes(model_type: str, encoder: Encoder, modules: dict) -> dict:
    if model_type == "gemma4":
        return {"vision_tower": EncoderVisionTower(encoder, modules["vision_tower"]), "embed_vision": nn.Identity()}
    return {"get_image_features": _image_features(encoder)}


def _image_features(encoder: Encoder) -> Callable[..., mx.array]:
    def get_image_features(pixel_values: mx.array, image_position_ids: Optional[mx.array] = None) -> mx.array:
        """gemma4_unified's ``Model.get_image_features`` on gemma_vision's encoder."""
        return _encode(encoder, pixel_values, image_position_ids)

    return get_image_features


def _release_weights(modules: dict) -> None:
    """Replaces every parameter of ``modules`` by an empty array of its dtype, so that the
    weights our encoder holds are not held a second time by mlx-vlm's modules."""
    for module in modules.values():
        module.update(tree_map(lambda value: mx.zeros((0,), dtype=value.dtype), module.parameters()))


def _reload_weights(model_dir: Path, modules: dict, dtypes: dict) -> None:
    """The parameters of ``modules`` read again from ``model_dir`` by mlx-vlm's own loader (a
    lazy model: only the vision tensors asked for here are read), cast to the dtypes the model
    held. Checks the names first; leaves the modules as they were on any failure."""
    from mlx_vlm.utils import load_model

    fresh = load_model(Path(model_dir), lazy=True)
    loaded = {}
    for name, held in dtypes.items():
        source = getattr(fresh, name, None)
        values = dict(tree_flatten(source.parameters())) if source is not None else {}
        if values.keys() != held.keys():
            missing = sorted(held.keys() - values.keys()) or sorted(values.keys() - held.keys())
            raise RuntimeError(f"{model_dir} no longer holds the model's vision parameters ({name}.{missing[0]})")
        loaded[name] = {key: value if value.dtype == held[key] else value.astype(held[key]) for key, value in values.items()}
    del fresh
    mx.eval([list(values.values()) for values in loaded.values()])
    for name, values in loaded.items():
        modules[name].update(tree_unflatten(list(values.items())))


def _same_directory(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
