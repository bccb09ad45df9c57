"""Shared helpers of the parity oracles: the reference as a user installs it, and saving outputs.

The reference is mlx-vlm 0.7.10 installed with every dependency pip resolves, exactly as a user
types it (`pip install mlx-vlm==0.7.10 "mlx[cpu]==0.32.4"`: xtask/python-reference.txt, which
`cargo xtask setup` installs into .deps/venv), on the stock MLX wheels with nothing preloaded.
Its modules import as they do for any user (`import mlx_vlm.models.gemma4.vision`), and the
oracles call its own functions and classes: nothing of it is re-expressed or loaded by hand.
"""

import argparse
import os

import mlx.core as mx


def parse_args(description, extra=None, default_device=None):
    """The oracle's arguments (`--out`, then `extra`'s), with MLX on the run's device (see
    select_device; `default_device` when the run names none)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="directory to write inputs and outputs into")
    if extra:
        extra(parser)
    args, _unknown = parser.parse_known_args()
    os.makedirs(args.out, exist_ok=True)
    select_device(default_device)
    return args


def select_device(default=None):
    """Makes the device the run names its default: `PARITY_DEVICE` (`cpu` or `gpu`; `cargo xtask
    gpu-check` sets `gpu`), else `default`, else MLX's own default (the GPU of a GPU build where
    there is one). Exits with a message when the device is unknown or this MLX lacks it."""
    name = os.environ.get("PARITY_DEVICE") or default
    if name is None:
        return
    if name not in ("cpu", "gpu"):
        raise SystemExit(f"PARITY_DEVICE={name}: expected cpu or gpu")
    device = mx.gpu if name == "gpu" else mx.cpu
    if not mx.is_available(device):
        raise SystemExit(f"PARITY_DEVICE={name}, but this MLX ({mx.__version__}) cannot run on the {name}")
    mx.set_default_device(device)


def save(path, tensors, metadata=None):
    """Saves a dict of mx.arrays as safetensors (evaluating them first)."""
    mx.eval(list(tensors.values()))
    mx.save_safetensors(path, tensors, metadata=metadata or {})


def environment_identity():
    """What the reference's outputs depend on besides a case: every installed distribution and
    its version (the reference as pip resolved it, MLX's wheels and the tools beside them),
    the interpreter, MLX's own version and the device it runs on, and the source of every
    oracle script beside this one."""
    import hashlib
    import importlib.metadata
    import sys

    parts = [sys.version, mx.__version__, str(mx.default_device())]
    parts += sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                parts.append(f"{name}:{hashlib.sha256(f.read()).hexdigest()}")
    return "\n".join(parts)


class ReferenceCache:
    """Reference outputs kept between runs (under `root`, e.g. .deps/parity-cache/vision), each
    in a directory named by its case and the SHA-256 of everything it depends on
    ([environment_identity] plus the caller's parts: the case's definition, its seed). A
    directory is complete once renamed into place; a case computed again under another key
    replaces the old one. Without a root nothing is kept and every case is computed."""

    def __init__(self, root):
        self.root = root
        self.environment = environment_identity() if root else None

    def directory(self, name, *parts):
        """The directory for `name` with `parts`, and whether it already holds the outputs."""
        import hashlib
        import json

        if not self.root:
            return None, False
        digest = hashlib.sha256()
        for part in (self.environment, name, *parts):
            text = part if isinstance(part, str) else json.dumps(part, sort_keys=True, default=str)
            digest.update(len(text).to_bytes(8, "little") + text.encode())
        path = os.path.join(self.root, f"{name}-{digest.hexdigest()[:24]}")
        return path, os.path.isdir(path)

    def commit(self, staging, path, name):
        """Moves a complete `staging` directory to `path`, dropping `name`'s other entries."""
        import shutil

        for entry in os.listdir(self.root):
            if entry.startswith(f"{name}-") and os.path.join(self.root, entry) != path and len(entry) == len(name) + 25:
                shutil.rmtree(os.path.join(self.root, entry), ignore_errors=True)
        os.rename(staging, path)


def link(target, path):
    """Makes `path` a symbolic link to `target`, replacing whatever is there."""
    import shutil

    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    os.symlink(os.path.abspath(target), path)
