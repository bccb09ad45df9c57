"""Corpora for `cargo xtask bench embed`: 640x480 photo-like JPEGs (quality 90, 4:2:0).

    python embed_corpus.py --out DIR --count N [--distinct K]

Writes K distinct images (scikit-image's astronaut resized with Pillow's BICUBIC plus seeded
noise, as the e2e bench makes its photo) and fills DIR up to N files with hard links to them, so
a large corpus costs no disk. Reused while its stamp matches.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "crates" / "parity" / "python"))
from preprocess import photo  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--distinct", type=int, default=200)
    args = parser.parse_args()
    out = Path(args.out)
    stamp = json.dumps(dict(count=args.count, distinct=args.distinct, size=[640, 480], quality=90))
    stamp_path = out / "corpus.stamp"
    if stamp_path.exists() and stamp_path.read_text() == stamp:
        return
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.jpg"):
        old.unlink()
    distinct = min(args.distinct, args.count)
    for i in range(distinct):
        Image.fromarray(photo(480, 640, seed=1000 + i)).save(out / f"photo-{i:05d}.jpg", quality=90)
    for i in range(distinct, args.count):
        os.link(out / f"photo-{i % distinct:05d}.jpg", out / f"photo-{i:05d}.jpg")
    stamp_path.write_text(stamp)


if __name__ == "__main__":
    main()
