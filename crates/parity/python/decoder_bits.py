"""The decoders whose bits come from C libraries (OpenJPEG for JPEG 2000, Little CMS for CIELab
TIFF, PSD Lab and IM LAB) on another platform: the fixture sets' files written out one per file, and
Pillow's answer for each, to compare with ours there (`cargo xtask emulate`).

    python decoder_bits.py files --out DIR      every case of the sets as a file in DIR
    python decoder_bits.py answers DIR          Pillow's answer per file of DIR, one JSON line
                                                each in name order (as `decode_digests` prints)

`files` writes each case of `tests/fixtures/jpeg2000/manifest.json` (damaged ones cut or XORed
as the test applies them), `tests/fixtures/psd_lab/`, `tests/fixtures/tiff/lab/`, the IM files
in LAB of `tests/fixtures/rare/images/`, and one
4096x4096 CIELab TIFF of every stored L*, a*, b* triplet. An answer is `{"file", "width",
"height", "fnv1a64"}` (`pillow_answer.py`'s digest of `load_image`'s RGB bytes), or `{"file",
"error"}`.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "crates/preprocess/tests/fixtures"
sys.path.insert(0, str(FIXTURES))


def every_triplet_tiff():
    """An uncompressed 4096x4096 CIELab TIFF (photometric 8, 8-bit samples, one strip) whose
    pixels are the 2^24 stored triplets in order."""
    import struct

    w = h = 4096
    pixels = bytearray(w * h * 3)
    for v in range(256):
        # Rows 16·v … 16·v + 15 hold L* = v, then a*, b* counting through 0..65535.
        block = bytearray(65536 * 3)
        block[0::3] = bytes([v]) * 65536
        block[1::3] = bytes(a for a in range(256) for _ in range(256))
        block[2::3] = bytes(range(256)) * 256
        pixels[v * 65536 * 3 : (v + 1) * 65536 * 3] = block
    entries = [
        (256, 4, 1, w), (257, 4, 1, h), (258, 3, 3, 0), (259, 3, 1, 1), (262, 3, 1, 8),
        (273, 4, 1, 0), (277, 3, 1, 3), (278, 4, 1, h), (279, 4, 1, len(pixels)),
    ]
    ifd_at = 8
    extra_at = ifd_at + 2 + 12 * len(entries) + 4
    data_at = extra_at + 6
    ifd = struct.pack("<H", len(entries))
    for tag, typ, count, value in entries:
        if tag == 258:
            ifd += struct.pack("<HHII", tag, typ, count, extra_at)
        elif tag == 273:
            ifd += struct.pack("<HHII", tag, typ, count, data_at)
        elif typ == 3:
            ifd += struct.pack("<HHIHH", tag, typ, count, value, 0)
        else:
            ifd += struct.pack("<HHII", tag, typ, count, value)
    ifd += struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", ifd_at) + ifd + struct.pack("<HHH", 8, 8, 8) + bytes(pixels)


def files(out):
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((FIXTURES / "jpeg2000/manifest.json").read_text())
    for i, case in enumerate(manifest["cases"]):
        data = bytearray((FIXTURES / "jpeg2000" / case["base"]).read_bytes())
        if case["cut"] is not None:
            data = data[: case["cut"]]
        for at, x in case["flips"]:
            data[at] ^= x
        (out / f"jpeg2000_{i:03}_{case['base']}").write_bytes(bytes(data))
    for path in sorted((FIXTURES / "psd_lab").glob("*.psd")):
        (out / f"psd_lab_{path.name}").write_bytes(path.read_bytes())
    for path in sorted((FIXTURES / "tiff/lab").glob("*.tif")):
        (out / f"tiff_lab_{path.name}").write_bytes(path.read_bytes())
    for path in sorted((FIXTURES / "rare/images").glob("im_*.im")):
        if "lab" in path.name.lower():
            (out / f"im_lab_{path.name}").write_bytes(path.read_bytes())
    (out / "tiff_lab_every_triplet.tif").write_bytes(every_triplet_tiff())
    print(f"decoder_bits: {len(list(out.iterdir()))} files in {out}")


def answers(directory):
    from pillow_answer import fnv1a64, load_image

    for path in sorted(directory.iterdir(), key=lambda p: p.name):
        try:
            rgb = load_image(path.read_bytes())
        except Exception as e:  # noqa: BLE001 - Pillow's refusal is an answer
            line = {"file": path.name, "error": f"{type(e).__name__}: {e}"}
        else:
            line = {"file": path.name, "width": rgb.width, "height": rgb.height, "fnv1a64": fnv1a64(rgb.tobytes())}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["files"] and sys.argv[2:3] == ["--out"]:
        files(Path(sys.argv[3]))
    elif sys.argv[1:2] == ["answers"]:
        answers(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)
