"""Embed a corpus of images on a Ray cluster: ``python -m gemma_vision.ray_embed``.

Ray Data runs the job: the image paths become a dataset, ``map_batches`` runs
:class:`EmbedBatch` (a class UDF: each actor loads the encoder once, with ``num_cpus`` CPUs
reserved per actor) over batches of paths, and ``write_parquet`` writes the rows:

- ``path`` (string): the image's path as listed;
- ``soft_tokens`` (int32);
- ``features``: ``list<fixed_size_list<float32, D>>`` for float32 encoders, or the bf16 bits as
  ``list<fixed_size_list<uint16, D>>`` (``.view(ml_dtypes.bfloat16)`` gives the values);
  bit-identical to ``gemma-vision encode`` / ``embed`` on the same file;
- ``model_identity`` (string): the encoder's cache identity; ``budget`` (int32);
- ``error`` (string): null, or why the image could not be read (``features`` is then null).

Rerunning into the same ``--out`` resumes: paths already written there by an encoder of the same
identity are skipped, and Parquet files a killed run left unreadable are removed.

One machine: without ``--address`` the script starts a local Ray instance with ``--num-cpus``
CPUs. Several machines: start Ray on each (``ray start --head`` on one, ``ray start --address
HEAD:6379`` on the others), install this package on every node, keep ``--model``, ``--images``
and ``--out`` on a filesystem every node sees under the same path, and pass ``--address
HEAD:6379`` (or ``auto`` on a node of the cluster). Features are the same bits on every node.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

def list_images(source: str) -> list[str]:
    """The images of ``source`` as ``gemma-vision embed`` lists them: every file below a
    directory that is not hidden (no name on its path below ``source`` starts with ``.``),
    whatever its extension, since images are identified by their bytes (sorted), or a ``.txt``
    file of paths (relative to it)."""
    root = Path(source)
    if root.is_dir():
        found = []
        for directory, subdirectories, files in os.walk(root, followlinks=True):
            subdirectories[:] = [name for name in subdirectories if not name.startswith(".")]
            for name in files:
                path = os.path.join(directory, name)
                if not name.startswith(".") and os.path.isfile(path):
                    found.append(path)
        return sorted(found)
    if root.is_file() and root.suffix.lower() == ".txt":
        lines = (line.strip() for line in root.read_text().splitlines())
        paths = [str(root.parent / line) for line in lines if line and not line.startswith("#")]
        return list(dict.fromkeys(paths))
    raise SystemExit(f"error: {source}: expected a directory or a .txt list of image paths")


def features_type(hidden: int, bf16: bool) -> pa.DataType:
    """``list<fixed_size_list<float32 | uint16, hidden>>``."""
    return pa.list_(pa.list_(pa.uint16() if bf16 else pa.float32(), hidden))


def schema(hidden: int, bf16: bool) -> pa.Schema:
    return pa.schema(
        [
            ("path", pa.string()),
            ("soft_tokens", pa.int32()),
            ("features", features_type(hidden, bf16)),
            ("model_identity", pa.string()),
            ("budget", pa.int32()),
            ("error", pa.string()),
        ]
    )


def to_table(
    paths: list[str],
    features: list[Optional[np.ndarray]],
    errors: list[Optional[str]],
    identity: str,
    budget: int,
    hidden: int,
    bf16: bool,
) -> pa.Table:
    """One row per path; ``features[i]`` is ``[n_i, hidden]`` (None where ``errors[i]`` says why)."""
    counts = [0 if f is None else f.shape[0] for f in features]
    element = np.uint16 if bf16 else np.float32
    present = [f.reshape(-1).view(element) if bf16 else f.reshape(-1) for f in features if f is not None]
    flat = np.concatenate(present) if present else np.zeros(0, dtype=element)
    rows = pa.FixedSizeListArray.from_arrays(pa.array(flat), hidden)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    mask = pa.array([f is None for f in features])
    column = pa.ListArray.from_arrays(offsets, rows, type=features_type(hidden, bf16), mask=mask)
    n = len(paths)
    return pa.Table.from_arrays(
        [
            pa.array(paths, pa.string()),
            pa.array(counts, pa.int32()),
            column,
            pa.array([identity] * n, pa.string()),
            pa.array([budget] * n, pa.int32()),
            pa.array(errors, pa.string()),
        ],
        schema=schema(hidden, bf16),
    )


class EmbedBatch:
    """The class UDF: one encoder per actor, loaded in the constructor; each call embeds a batch
    of paths. An image that cannot be read gets an ``error`` row; the batch goes on."""

    def __init__(self, model: str, dtype: str = "native", max_soft_tokens: Optional[int] = None):
        from gemma_vision import Encoder, retain_freed_host_memory

        # The actor's process only encodes: keep freed memory mapped, as `gemma-vision embed` does.
        retain_freed_host_memory()
        self.encoder = Encoder(model, dtype=dtype, max_soft_tokens=max_soft_tokens)
        self.identity = self.encoder.identity
        self.budget = self.encoder.max_soft_tokens
        self.hidden = self.encoder.hidden_size

    def __call__(self, batch: dict[str, np.ndarray]) -> pa.Table:
        paths = [str(p) for p in batch["path"]]
        try:
            features: list[Optional[np.ndarray]] = list(self.encoder.encode(paths))
            errors: list[Optional[str]] = [None] * len(paths)
        except (OSError, ValueError):
            # Some image failed: encode one at a time (each image's bits are the same alone).
            features, errors = [], []
            for path in paths:
                try:
                    features.extend(self.encoder.encode([path]))
                    errors.append(None)
                except (OSError, ValueError) as e:
                    features.append(None)
                    errors.append(str(e))
        bf16 = any(f is not None and f.dtype.itemsize == 2 for f in features) or self._bf16()
        return to_table(paths, features, errors, self.identity, self.budget, self.hidden, bf16)

    def _bf16(self) -> bool:
        """Whether this encoder's features are bf16, for a batch in which every image failed."""
        if not hasattr(self, "_is_bf16"):
            probe = self.encoder.encode([np.zeros((64, 64, 3), np.uint8)])[0]
            self._is_bf16 = probe.dtype.itemsize == 2
        return self._is_bf16


def actor_options(actors: int, cpus: float) -> dict:
    """The ``map_batches`` options of the job's actors: a pool of ``actors`` of them
    (``compute=ray.data.ActorPoolStrategy(size=actors)``, the form Ray Data takes for a class UDF
    since ``concurrency=`` was deprecated in 2.51), their CPUs, and their process environment.

    ``MALLOC_ARENA_MAX=1`` (read by glibc when the worker process starts) keeps every thread's
    ``malloc`` in one arena. A Ray worker's threads use several arenas before the UDF runs, and
    Ray Data calls it from a thread of its own: there, even after
    :func:`gemma_vision.retain_freed_host_memory` (which :class:`EmbedBatch` calls), the large
    blocks an encode frees fault in again at every batch. With one arena from the start they stay
    mapped, as in ``gemma-vision embed``. (Setting the arena limit later, with ``mallopt``, does
    not help: the arenas exist by then.)"""
    import ray.data

    return {
        "compute": ray.data.ActorPoolStrategy(size=actors),
        "num_cpus": cpus,
        "runtime_env": {"env_vars": {"MALLOC_ARENA_MAX": "1"}},
    }


def done_paths(out: Path, identity: str, budget: int) -> set[str]:
    """Paths already written under ``out`` by this encoder (identity) and budget. Removes the
    Parquet files a killed run left unreadable; refuses files of another encoder or budget."""
    done: set[str] = set()
    for file in sorted(out.glob("*.parquet")):
        try:
            table = pq.read_table(file, columns=["path", "model_identity", "budget"])
        except (pa.ArrowException, OSError):
            file.unlink()
            continue
        identities = set(table.column("model_identity").to_pylist())
        if identities - {identity}:
            raise SystemExit(
                f"error: {file} holds features of another encoder (model identity "
                f"{sorted(identities - {identity})[0]}, this run's {identity}): use another --out"
            )
        budgets = set(table.column("budget").to_pylist())
        if budgets - {budget}:
            raise SystemExit(
                f"error: {file} was written with budget {sorted(budgets - {budget})[0]}, this run's is {budget}: "
                "use another --out"
            )
        done.update(table.column("path").to_pylist())
    return done


def _describe(model: str, dtype: str, max_soft_tokens: Optional[int]) -> tuple[str, int, int]:
    from gemma_vision import Encoder

    encoder = Encoder(model, dtype=dtype, max_soft_tokens=max_soft_tokens)
    return encoder.identity, encoder.max_soft_tokens, encoder.hidden_size


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gemma_vision.ray_embed",
        description="Embed a directory of images on a Ray cluster into Parquet (resumable).",
    )
    parser.add_argument(
        "--model",
        required=True,
        help="the model directory (seen by every node), or ORG/NAME[@REVISION] (each node finds or fetches it)",
    )
    parser.add_argument("--images", required=True, help="a directory of images, or a .txt list of paths")
    parser.add_argument("--out", required=True, help="the output directory of Parquet files")
    parser.add_argument("--address", help="a running cluster (HEAD:6379, or auto); default: start a local one")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local cluster [default: all]")
    parser.add_argument("--actors", type=int, default=1, help="encoder actors [default: 1]")
    parser.add_argument("--cpus-per-actor", type=float, help="CPUs reserved per actor [default: cluster CPUs / actors]")
    parser.add_argument("--batch", type=int, default=8, help="images per map_batches call [default: 8]")
    parser.add_argument("--rows-per-file", type=int, default=256, help="rows per Parquet file at least [default: 256]")
    parser.add_argument("--max-soft-tokens", type=int, help="the soft-token budget [default: the checkpoint's]")
    parser.add_argument("--dtype", choices=["native", "f32"], default="native")
    args = parser.parse_args(argv)
    for name in ("actors", "batch", "rows_per_file", "max_soft_tokens", "num_cpus"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    import ray

    paths = list_images(args.images)
    if not paths:
        raise SystemExit(f"error: {args.images}: no images")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        cpus = args.cpus_per_actor or max(1.0, ray.cluster_resources().get("CPU", 1.0) // args.actors)
        describe = ray.remote(num_cpus=cpus)(_describe)
        identity, budget, hidden = ray.get(describe.remote(args.model, args.dtype, args.max_soft_tokens))
        done = done_paths(out, identity, budget)
        todo = [p for p in paths if p not in done]
        started = time.perf_counter()
        if todo:
            dataset = ray.data.from_items([{"path": p} for p in todo])
            embedded = dataset.map_batches(
                EmbedBatch,
                fn_constructor_kwargs={
                    "model": args.model,
                    "dtype": args.dtype,
                    "max_soft_tokens": args.max_soft_tokens,
                },
                batch_size=args.batch,
                batch_format="numpy",
                **actor_options(args.actors, cpus),
            )
            embedded.write_parquet(str(out.resolve()), min_rows_per_file=args.rows_per_file)
        seconds = time.perf_counter() - started
    finally:
        ray.shutdown()
    rate = len(todo) / seconds if seconds > 0 else 0.0
    print(
        f"embedded {len(todo)} image(s) in {seconds:.1f} s, {rate:.2f} images/s, with {args.actors} actor(s) "
        f"into {out}; skipped {len(done)} already there; model identity {identity}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
