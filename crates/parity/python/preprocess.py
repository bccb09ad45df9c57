"""Reference side of `cargo xtask parity preprocess`: mlx-vlm 0.7.10's image path on Pillow 13.

For every input file (scikit-image's sample photographs plus generated edge cases written into
`<out>/inputs/`), runs the reference's own code:
  - `mlx_vlm.utils.load_image` (Image.open -> ImageOps.exif_transpose -> convert("RGB")),
  - `Gemma4ImageProcessor.aspect_ratio_preserving_resize` (-> `get_aspect_ratio_preserving_size`
    and Pillow's BICUBIC resize), then the processor's rescale `astype(float32) * rescale_factor`
    and HWC -> CHW (gemma4 `pixel_values`),
  - `_convert_image_to_model_patches` + `_pad_patches` (gemma4_unified input),
  - for some files, `Gemma4VideoProcessor._resize_frames` + `_convert_video_to_patches` +
    `_pad_video_patches` on the image as a one-frame video (the gemma4 padded path),
each the reference's own function or method. Writes raw little-endian arrays and `manifest.json`; the
Rust side (`parity-preprocess`) runs ours on the same files and compares byte for byte.

Then the corpus rows' reference (`corpus.py`): `load_image` on every file of Pillow's test images
(`--corpus`, by default `.deps/corpus/pillow-13.0.0/Tests/images`), written into `<out>/corpus/`,
and on the fuzz files of Pillow's repository that its sdist leaves out, into `<out>/corpus_repo/`.
"""

import io
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlx_vlm.models.gemma4 import processing_gemma4 as gemma4  # noqa: E402
from mlx_vlm.models.gemma4_unified import processing_gemma4_unified as unified  # noqa: E402
from mlx_vlm.utils import load_image  # noqa: E402
from transformers.image_utils import ChannelDimension  # noqa: E402
from reference import parse_args  # noqa: E402
from corpus import write_corpus  # noqa: E402

PATCH, POOL = 16, 3
RESCALE = 1 / 255
ROOT = Path(__file__).resolve().parents[3]
REPOSITORY_FUZZ_FILES = ROOT / "crates/preprocess/tests/fixtures/pillow_repo"


class Settings:
    """The processor attributes the reference's methods read (`self.…`), for calling them
    without building a whole processor."""

    def __init__(self, max_soft_tokens):
        self.patch_size = PATCH
        self.pooling_kernel_size = POOL
        self.max_soft_tokens = max_soft_tokens
        self.rescale_factor = RESCALE


get_size = gemma4.get_aspect_ratio_preserving_size
resize = gemma4.Gemma4ImageProcessor.aspect_ratio_preserving_resize
resize_frames = gemma4.Gemma4VideoProcessor._resize_frames
video_patches = gemma4._convert_video_to_patches
pad_video = gemma4._pad_video_patches
model_patches = unified._convert_image_to_model_patches
pad_patches = unified._pad_patches


# ---------------------------------------------------------------- generated edge cases


def photo(h, w, seed=0):
    """A photo-like RGB array: a crop/resize of scikit-image's astronaut plus noise."""
    base = Image.open(skimage_data() / "astronaut.png").convert("RGB").resize((w, h), Image.BICUBIC)
    rng = np.random.default_rng(seed)
    noise = rng.integers(-12, 13, size=(h, w, 3))
    return np.clip(np.asarray(base).astype(np.int32) + noise, 0, 255).astype(np.uint8)


def skimage_data():
    import importlib.util

    spec = importlib.util.find_spec("skimage")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def write_png_raw(path, w, h, bit_depth, color_type, rows, interlace=0):
    """A PNG written by hand (Pillow cannot write every colour type / depth)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, interlace)
    data = b"".join(b"\0" + r for r in rows)
    Path(path).write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(data)) + chunk(b"IEND", b"")
    )


def generate(inputs):
    """Edge cases the issue lists; returns their paths."""
    inputs.mkdir(parents=True, exist_ok=True)
    made = []

    def save(name, image, **kw):
        path = inputs / name
        image.save(path, **kw)
        made.append(path)

    rgb = Image.fromarray(photo(301, 517))
    save("photo_517x301_q90.jpg", rgb, quality=90)
    save("photo_517x301_444.jpg", rgb, quality=95, subsampling=0)
    save("photo_517x301_422.jpg", rgb, quality=85, subsampling=1)
    save("photo_517x301_progressive.jpg", rgb, quality=90, progressive=True)
    save("photo_517x301_gray.jpg", rgb.convert("L"), quality=90)
    save("photo_517x301_cmyk.jpg", rgb.convert("CMYK"), quality=90)
    for orientation in range(2, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        save(f"photo_exif_orientation_{orientation}.jpg", Image.fromarray(photo(120, 200, orientation)), exif=exif)
    save("photo_517x301.png", rgb)
    save("strip_1x517.png", Image.fromarray(photo(1, 517, 1)))
    save("strip_600x1.png", Image.fromarray(photo(600, 1, 2)))
    save("strip_10x10000.png", Image.fromarray(photo(10, 10000, 3)))
    save("exact_672x912.png", Image.fromarray(photo(672, 912, 4)))  # already the target size
    save("divisible_480x480.png", Image.fromarray(photo(480, 480, 5)))  # upscale to 768
    save("upscale_33x47.png", Image.fromarray(photo(33, 47, 6)))
    save("upscale_3x3.png", Image.fromarray(photo(3, 3, 7)))
    save("downscale_1080x1920.jpg", Image.fromarray(photo(1080, 1920, 8)), quality=92)
    rgba = np.dstack([photo(150, 230, 9), np.random.default_rng(9).integers(0, 256, (150, 230), dtype=np.uint8)])
    save("rgba_230x150.png", Image.fromarray(rgba, "RGBA"))
    save("la_230x150.png", Image.fromarray(rgba[..., 0], "L").convert("LA"))
    save("gray_230x150.png", Image.fromarray(rgba[..., 1], "L"))
    pal = rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=200)
    pal.info["transparency"] = 3
    save("palette_trns_517x301.png", pal, transparency=3)
    save("palette_517x301.gif", rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=64), transparency=5)
    # 16-bit PNGs (hand-written: big-endian samples with noisy low bytes).
    rng = np.random.default_rng(11)
    w, h = 131, 97
    rgb16 = (photo(h, w, 11).astype(np.uint16) << 8) | rng.integers(0, 256, (h, w, 3), dtype=np.uint16)
    write_png_raw(inputs / "rgb16_131x97.png", w, h, 16, 2, [r.astype(">u2").tobytes() for r in rgb16])
    made.append(inputs / "rgb16_131x97.png")
    rgba16 = np.dstack([rgb16, rng.integers(0, 65536, (h, w), dtype=np.uint16)])
    write_png_raw(inputs / "rgba16_131x97.png", w, h, 16, 6, [r.astype(">u2").tobytes() for r in rgba16])
    made.append(inputs / "rgba16_131x97.png")
    gray16 = rng.integers(0, 512, (h, w), dtype=np.uint16)  # half the values saturate in Pillow
    write_png_raw(inputs / "gray16_131x97.png", w, h, 16, 0, [r.astype(">u2").tobytes() for r in gray16])
    made.append(inputs / "gray16_131x97.png")
    la16 = np.dstack([gray16 * 97, rng.integers(0, 65536, (h, w), dtype=np.uint16)])
    write_png_raw(inputs / "la16_131x97.png", w, h, 16, 4, [r.astype(">u2").tobytes() for r in la16])
    made.append(inputs / "la16_131x97.png")
    gray2 = rng.integers(0, 256, (h, (w * 2 + 7) // 8), dtype=np.uint8)
    write_png_raw(inputs / "gray2bit_131x97.png", w, h, 2, 0, [r.tobytes() for r in gray2])
    made.append(inputs / "gray2bit_131x97.png")
    adam7 = photo(h, w, 12)
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    rows = [r.tobytes() for x0, y0, dx, dy in passes for r in adam7[y0::dy, x0::dx] if r.size]
    write_png_raw(inputs / "interlaced_131x97.png", w, h, 8, 2, rows, interlace=1)
    made.append(inputs / "interlaced_131x97.png")
    save("lossless_230x150.webp", Image.fromarray(photo(150, 230, 13)), lossless=True)
    save("lossy_230x150.webp", Image.fromarray(photo(150, 230, 14)), quality=80)
    save("lossy_alpha_230x150.webp", Image.fromarray(rgba, "RGBA"), quality=80)
    save("rgb_230x150.bmp", Image.fromarray(photo(150, 230, 15)))
    save("palette_230x150.bmp", Image.fromarray(photo(150, 230, 16)).convert("P", palette=Image.Palette.ADAPTIVE))
    save("rgb_230x150.tif", Image.fromarray(photo(150, 230, 17)))
    save("rgb_lzw_230x150.tif", Image.fromarray(photo(150, 230, 18)), compression="tiff_lzw")
    save("photo_4000x3000.jpg", Image.fromarray(photo(3000, 4000, 19)), quality=90)
    return made


# ---------------------------------------------------------------- the reference path


def raw(out, name, array):
    np.ascontiguousarray(array).tofile(out / name)
    return name


def run_case(out, case_id, path, budget, video):
    image = load_image(str(path))
    decoded = np.array(image)
    entry = {"id": case_id, "file": str(path), "budget": budget}
    entry["decoded"] = {"shape": list(decoded.shape), "file": raw(out, f"{case_id}.decoded.u8", decoded)}
    max_patches = budget * POOL**2
    settings = Settings(budget)
    resized = resize(settings, decoded, PATCH, max_patches, POOL, ChannelDimension.LAST)
    entry["resized"] = {"shape": list(resized.shape), "file": raw(out, f"{case_id}.resized.u8", resized)}
    # Gemma4ImageProcessor.preprocess: rescale, then HWC -> CHW.
    rescaled = resized.astype(np.float32) * settings.rescale_factor
    chw = np.transpose(rescaled, (2, 0, 1))
    h, w = chw.shape[-2], chw.shape[-1]
    entry["pixel_values"] = {"shape": list(chw.shape), "file": raw(out, f"{case_id}.pixel_values.f32", chw)}
    entry["soft_tokens"] = (h // PATCH) * (w // PATCH) // (POOL**2)
    # Gemma4UnifiedImageProcessor.preprocess: model patches of patch * pool, padded to the budget.
    patches, positions = model_patches(chw, PATCH * POOL)
    entry["unified_soft_tokens"] = int(patches.shape[0])
    patches, positions = pad_patches(patches, positions, budget)
    entry["unified_patches"] = {"shape": list(patches.shape), "file": raw(out, f"{case_id}.unified.f32", patches)}
    entry["unified_positions"] = {
        "shape": list(positions.shape),
        "file": raw(out, f"{case_id}.unified_pos.i64", positions.astype(np.int64)),
    }
    if video:
        # Gemma4VideoProcessor.__call__ on a one-frame video (T, C, H, W) uint8, its budget 70.
        frames = np.transpose(decoded, (2, 0, 1))[None]
        vsettings = Settings(70)
        vmax = 70 * POOL**2
        frames = resize_frames(vsettings, frames, vmax)
        video_f = frames.astype(np.float32)
        video_f = video_f * vsettings.rescale_factor
        vp, vpos = video_patches(video_f, PATCH)
        real = min(vp.shape[1], vmax)
        vp, vpos = pad_video(vp, vpos, vmax)
        entry["video"] = {
            "budget": 70,
            "patches": {"shape": list(vp.shape[1:]), "file": raw(out, f"{case_id}.video.f32", vp[0])},
            "positions": {"shape": list(vpos.shape[1:]), "file": raw(out, f"{case_id}.video_pos.i64", vpos[0].astype(np.int64))},
            "soft_tokens": real // (POOL**2),
        }
    return entry


BENCH_BUDGETS = (280, 1120)


def bench_inputs(out):
    """The files `cargo xtask bench preprocess` times on both sides: a 12-megapixel JPEG (4:2:0,
    quality 90) and a 1024x768 PNG, both photographs (scikit-image's astronaut, resized)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"photo_4000x3000": out / "photo_4000x3000.jpg", "photo_1024x768": out / "photo_1024x768.png"}
    Image.fromarray(photo(3000, 4000, 21)).save(files["photo_4000x3000"], quality=90)
    Image.fromarray(photo(768, 1024, 22)).save(files["photo_1024x768"])
    return files


def reference_unified_input(path, budget):
    """The reference's whole path for one file: load_image, the processor's resize, rescale,
    CHW, 48x48 model patches padded to the budget (Gemma4UnifiedImageProcessor.preprocess)."""
    decoded = np.array(load_image(str(path)))
    resized = resize(Settings(budget), decoded, PATCH, budget * POOL**2, POOL, ChannelDimension.LAST)
    chw = np.transpose(resized.astype(np.float32) * RESCALE, (2, 0, 1))
    patches, positions = model_patches(chw, PATCH * POOL)
    return pad_patches(patches, positions, budget)


def bench(out, samples):
    """Times the reference on the bench inputs; one JSON line per case (median seconds)."""
    import time

    files = bench_inputs(out)
    for name, path in files.items():
        for budget in BENCH_BUDGETS:
            reference_unified_input(path, budget)  # warm-up
            times = []
            for _ in range(samples):
                start = time.perf_counter()
                reference_unified_input(path, budget)
                times.append(time.perf_counter() - start)
            times.sort()
            print(json.dumps({"case": f"{name}_{budget}", "seconds": times[len(times) // 2], "samples": samples}))
            sys.stdout.flush()


def main():
    default_corpus = ROOT / ".deps/corpus/pillow-13.0.0/Tests/images"
    args = parse_args(
        __doc__,
        extra=lambda p: (
            p.add_argument("--bench", action="store_true"),
            p.add_argument("--samples", type=int, default=10),
            p.add_argument("--corpus", default=str(default_corpus), help="Pillow's Tests/images"),
        ),
    )
    out = Path(args.out)
    if args.bench:
        bench(out, args.samples)
        return
    data = skimage_data()
    photos = sorted(p for p in data.iterdir() if p.suffix.lower() in (".png", ".jpg", ".gif", ".tif"))
    generated = generate(out / "inputs")
    cases = []
    for path in photos + generated:
        case_id = f"{path.parent.name}-{path.stem}-{path.suffix[1:]}"
        video = path.name in ("astronaut.png", "rocket.jpg", "strip_10x10000.png", "upscale_3x3.png")
        try:
            cases.append(run_case(out, case_id, path, 280, video))
        except Exception as e:  # the reference rejects it: ours must too
            cases.append({"id": case_id, "file": str(path), "budget": 280, "error": f"{type(e).__name__}: {e}"})
    for budget in (70, 140, 560, 1120, 1):
        path = data / "chelsea.png"
        cases.append(run_case(out, f"chelsea-budget{budget}", path, budget, False))
    (out / "manifest.json").write_text(json.dumps({"cases": cases}, indent=1))
    print(f"preprocess reference: {len(cases)} cases written to {out}")
    write_corpus(Path(args.corpus), out / "corpus")
    write_corpus(REPOSITORY_FUZZ_FILES, out / "corpus_repo", pattern="crash-*")


if __name__ == "__main__":
    main()
