"""The parity cases' input images: scikit-image's sample photographs and generated images.

A name "gen:<kind>-<W>x<H>.png" is generated (gradient, checker, strip, or seeded noise); any
other name is a file of scikit-image's data directory, copied.
"""

import os
import shutil

import numpy as np
from PIL import Image

SKIMAGE_DATA = os.path.join(os.path.dirname(np.__file__), "..", "skimage", "data")


def generated_image(spec, path):
    """Writes a generated test image: "<kind>-<W>x<H>.png"."""
    kind, size = spec.split("-", 1)
    width, height = (int(v) for v in size.split(".")[0].split("x"))
    y, x = np.mgrid[0:height, 0:width]
    if kind == "gradient":
        rgb = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), (x + y) * 7 % 256], -1)
    elif kind == "checker":
        rgb = np.stack([((x // 3 + y // 3) % 2) * 255, (x * 13) % 256, (y * 29) % 256], -1)
    elif kind == "strip":
        rgb = np.stack([(x * 3) % 256, np.full_like(x, 128), (x * 11 + 5) % 256], -1)
    else:
        rgb = np.random.default_rng(sum(map(ord, spec))).integers(0, 256, (height, width, 3))
    Image.fromarray(rgb.astype(np.uint8), "RGB").save(path)


def materialize_images(names, directory):
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name in names:
        if name.startswith("gen:"):
            path = os.path.join(directory, name[4:])
            if not os.path.exists(path):
                generated_image(name[4:], path)
        else:
            path = os.path.join(directory, name)
            if not os.path.exists(path):
                shutil.copyfile(os.path.join(SKIMAGE_DATA, name), path)
        paths.append(path)
    return paths
