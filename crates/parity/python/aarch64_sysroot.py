"""An aarch64 Linux userland for stock MLX under `qemu-aarch64` user emulation, from the registries.

`--root DIR` receives:
- `DIR/sysroot`: Debian bookworm's arm64 CPython 3.11 and the C/C++/Fortran runtimes the MLX
  wheels load, each `.deb` taken from deb.debian.org's package index (its SHA-256 checked) and
  unpacked with `dpkg-deb -x`. No dependency solving: the list below is the closed set of what
  `python3.11` and `libmlx.so` load. `qemu-aarch64 -L DIR/sysroot` runs programs against it.
- `DIR/site`: the aarch64 PyPI wheels of the reference's MLX release and NumPy (the versions
  given on the command line, from `.deps/venv`'s lock), unpacked as a `PYTHONPATH` directory.

Idempotent: `DIR/stamp` records what was installed, and a second run with the same request
returns at once.
"""

import argparse
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile

MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
# Python 3.11 and its stdlib's extension modules' libraries, the C and C++ runtimes, and the
# Fortran and OpenMP runtimes that the wheels' bundled BLAS links.
PACKAGES = [
    "libc6",
    "libgcc-s1",
    "libstdc++6",
    "libgfortran5",
    "libgomp1",
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "libexpat1",
    "zlib1g",
    "libssl3",
    "libffi8",
    "libbz2-1.0",
    "liblzma5",
    "libsqlite3-0",
    "libncursesw6",
    "libtinfo6",
    "libreadline8",
    "libuuid1",
    "libnsl2",
    "libtirpc3",
    "libdb5.3",
    "libgdbm6",
    "libcrypt1",
]
WHEEL_PLATFORMS = ["manylinux_2_35_aarch64", "manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"]


def package_index():
    """Package name -> (Filename, SHA256) of bookworm main's arm64 index."""
    url = f"{MIRROR}/dists/{SUITE}/main/binary-arm64/Packages.xz"
    text = lzma.decompress(urllib.request.urlopen(url, timeout=120).read()).decode()
    index = {}
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" "))
        if "Package" in fields and "Filename" in fields:
            index[fields["Package"]] = (fields["Filename"], fields["SHA256"], fields["Version"])
    return index


def install_sysroot(sysroot):
    index = package_index()
    missing = [p for p in PACKAGES if p not in index]
    if missing:
        sys.exit(f"aarch64 sysroot: not in {SUITE}'s arm64 index: {', '.join(missing)}")
    versions = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in PACKAGES:
            filename, sha256, version = index[name]
            data = urllib.request.urlopen(f"{MIRROR}/{filename}", timeout=300).read()
            if hashlib.sha256(data).hexdigest() != sha256:
                sys.exit(f"aarch64 sysroot: {filename}: SHA-256 differs from the index")
            deb = os.path.join(tmp, os.path.basename(filename))
            with open(deb, "wb") as f:
                f.write(data)
            subprocess.run(["dpkg-deb", "-x", deb, sysroot], check=True)
            versions[name] = version
    return versions


def install_site(site, pins):
    with tempfile.TemporaryDirectory() as wheels:
        platforms = [arg for p in WHEEL_PLATFORMS for arg in ("--platform", p)]
        command = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
        command += ["--only-binary", ":all:", "--python-version", "3.11", "--implementation", "cp", "-d", wheels]
        subprocess.run(command + platforms + pins, check=True)
        names = sorted(os.listdir(wheels))
        for name in names:
            with zipfile.ZipFile(os.path.join(wheels, name)) as wheel:
                wheel.extractall(site)
    # Wheels carry no permission bits through `zipfile`: the bundled libraries must be loadable.
    for folder, _, files in os.walk(site):
        for file in files:
            if ".so" in file:
                os.chmod(os.path.join(folder, file), 0o755)
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("pins", nargs="+", help="wheel requirements, e.g. mlx==0.32.4 mlx-cpu==0.32.4 numpy==2.4.6")
    args = parser.parse_args()
    request = {"suite": SUITE, "packages": PACKAGES, "pins": args.pins}
    stamp = os.path.join(args.root, "stamp")
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f).get("request") == request:
                return
    shutil.rmtree(args.root, ignore_errors=True)
    os.makedirs(args.root)
    versions = install_sysroot(os.path.join(args.root, "sysroot"))
    wheels = install_site(os.path.join(args.root, "site"), args.pins)
    with open(stamp, "w") as f:
        json.dump({"request": request, "debs": versions, "wheels": wheels}, f, indent=1)
    print(f"aarch64 sysroot: {len(versions)} Debian packages, wheels {', '.join(wheels)}", file=sys.stderr)


if __name__ == "__main__":
    main()
