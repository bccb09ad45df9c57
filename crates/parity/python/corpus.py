"""Reference side of the corpus rows of `cargo xtask parity preprocess`: mlx-vlm 0.7.10's
`load_image` (Image.open -> ImageOps.exif_transpose -> convert("RGB")) on every file of Pillow
13.0.0's test images (`Tests/images` of its sdist, which `cargo xtask setup` unpacks into
`.deps/corpus/pillow-13.0.0/Tests/images`), and on the fuzz files of Pillow's repository that
its sdist leaves out (`crates/preprocess/tests/fixtures/pillow_repo/crash-*`).

Per file, in `<out>/corpus/manifest.json`: its path relative to the images directory, the
`format` Pillow's `Image.open` identified (None when it identifies none), and either the decoded
RGB8 bytes (`rgb`, a file beside the manifest, HWC, with their `shape`) or the `error` that
`load_image` raised. A file that takes longer than TIMEOUT_SECONDS counts as refused
("Timeout"). The Rust side (`parity::corpus_suite`) decodes each file with ours and classes it.
"""

import json
import signal
import warnings
from pathlib import Path

import numpy as np
from mlx_vlm.utils import load_image
from PIL import Image

# Pillow's own limit on one file: longer counts as the reference refusing it.
TIMEOUT_SECONDS = 20


class Timeout(BaseException):
    """A file past TIMEOUT_SECONDS (not an `Exception`, so no handler of the reference's catches it)."""


def _alarm(*_):
    raise Timeout("Timeout")


def identified_format(path):
    """Pillow's `Image.open(path).format`, or None when no plugin accepts the file."""
    try:
        with Image.open(path) as image:
            return image.format
    except Exception:
        return None


def reference_case(case, path, out, index):
    """Fills one file's entry: its format, and its decoded RGB bytes (written to `out`) or the
    error."""
    case["format"] = identified_format(path)
    try:
        rgb = np.asarray(load_image(str(path)))
        case["shape"] = list(rgb.shape)
        case["rgb"] = f"{index:04}.rgb"
        (out / case["rgb"]).write_bytes(np.ascontiguousarray(rgb).tobytes())
    except Exception as e:
        case["error"] = f"{type(e).__name__}: {e}"[:300]


def write_corpus(images, out, pattern="*"):
    """Writes `<out>/manifest.json` and the decoded files for every file under `images` whose
    name matches `pattern`."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.rgb"):
        stale.unlink()
    if not images.is_dir():
        (out / "manifest.json").write_text(json.dumps({"images": str(images), "missing": True, "cases": []}))
        print(f"corpus reference: {images} is missing (run `cargo xtask setup`)")
        return
    warnings.simplefilter("ignore")
    previous = signal.signal(signal.SIGALRM, _alarm)
    cases = []
    try:
        files = sorted((p for p in images.rglob(pattern) if p.is_file()), key=lambda p: p.relative_to(images).as_posix())
        for index, path in enumerate(files):
            rel = path.relative_to(images).as_posix()
            case = {"file": rel, "format": None}
            signal.alarm(TIMEOUT_SECONDS)
            try:
                reference_case(case, path, out, index)
            except Timeout:
                case.pop("rgb", None)
                case.pop("shape", None)
                case["error"] = "Timeout"
            finally:
                signal.alarm(0)
            cases.append(case)
    finally:
        signal.signal(signal.SIGALRM, previous)
    manifest = {"images": str(images), "timeout_seconds": TIMEOUT_SECONDS, "cases": cases}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    read = sum("rgb" in c for c in cases)
    print(f"corpus reference: {len(cases)} files, {read} read by Pillow, written to {out}")
