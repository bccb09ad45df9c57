"""An aarch64 Linux userland for stock MLX under `qemu-aarch64` user emulation, from the registries.

`--root DIR` receives:
- `DIR/sysroot`: Debian bookworm's arm64 CPython 3.11 and the C/C++/Fortran runtimes the MLX
  wheels load, each `.deb` taken from deb.debian.org's package index (its SHA-256 checked) and
  unpacked with `dpkg-deb -x`. No dependency solving: the list below is the closed set of what
  `python3.11`, `libmlx.so` and the reference's other wheels load beyond the libraries they
  bundle. `qemu-aarch64 -L DIR/sysroot` runs programs against it.
- `DIR/site`: the reference as a user on aarch64 Linux installs it, as wheels only: the lines of
  `--requirements` (`xtask/python-reference.txt`: `mlx-vlm==0.7.10`, `mlx[cpu]==0.32.4`) and
  every dependency pip resolves for them, for CPython 3.11 on bookworm's glibc
  (`manylinux_2_36_aarch64` and older), each pinned to its version in `--constraints` (the
  x86-64 reference's lock, `.deps/venv/reference.lock`) where that version has an aarch64
  wheel, all unpacked as a `PYTHONPATH` directory. Nothing of it runs on this machine. What
  differs from the x86-64 lock is printed and recorded in the stamp: a version without an
  aarch64 wheel (pip then takes the newest that has one), and the distributions of
  `SDIST_ONLY`, which publish no aarch64 wheel at all (an aarch64 `pip install` builds them
  from source) and which the reference imports only on paths the parity suites do not take: a
  distribution that requires one is fetched without its dependencies, and its other
  requirements are resolved as usual. `DIR/site.lock` lists what was unpacked.

Idempotent: `DIR/stamp` records what was installed, and a second run with the same request
returns at once.
"""

import argparse
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

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
# The wheel platforms pip accepts on bookworm's glibc (2.36), newest first (pip takes each
# `--platform` as given, so every manylinux_2_N is listed).
GLIBC_MINOR = 36
WHEEL_PLATFORMS = [f"manylinux_2_{n}_aarch64" for n in range(GLIBC_MINOR, 16, -1)] + ["manylinux2014_aarch64"]
# Distributions with no aarch64 Linux wheel on PyPI, and why the reference runs without them.
SDIST_ONLY = {
    "miniaudio": "audio decoding, imported only inside mlx_vlm.utils.load_audio and mlx_audio.audio_io",
}


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


def pip_download(wheels, requirements, constraints, no_deps=False):
    """`pip download` of `requirements` as aarch64 CPython 3.11 wheels into `wheels`; returns
    pip's exit status and its output."""
    command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--progress-bar", "off"]
    command += ["--only-binary", ":all:", "--implementation", "cp", "--python-version", "3.11", "--abi", "cp311"]
    command += [arg for p in WHEEL_PLATFORMS for arg in ("--platform", p)]
    command += ["-d", wheels, "-c", constraints] + (["--no-deps"] if no_deps else []) + requirements
    result = subprocess.run(command, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def wheel_requirements(wheel, extras):
    """The requirements a wheel's metadata declares for `extras`, on aarch64 Linux."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    requirements = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = Requirement(line.split(":", 1)[1].strip())
        environment = {"platform_machine": "aarch64", "platform_system": "Linux", "sys_platform": "linux"}
        if requirement.marker is None or any(
            requirement.marker.evaluate(dict(environment, extra=extra)) for extra in [""] + sorted(extras)
        ):
            requirement.marker = None
            requirements.append(requirement)
    return requirements


def resolve(wheels, requested, pins):
    """Downloads `requested` (requirement strings) and their dependencies into `wheels`, each
    pinned by `pins` (canonical name -> `name==version`, the x86-64 lock) while the pinned
    version has an aarch64 wheel, [SDIST_ONLY] left out."""
    pins = {name: line for name, line in pins.items() if name not in SDIST_ONLY}
    requirements = [Requirement(r) for r in requested]
    without_deps = []  # distributions fetched without their dependencies (they require an SDIST_ONLY one)
    with tempfile.TemporaryDirectory() as tmp:
        constraints = os.path.join(tmp, "constraints.txt")
        for _ in range(64):
            with open(constraints, "w") as f:
                f.write("\n".join(pins.values()) + "\n")
            shutil.rmtree(wheels, ignore_errors=True)
            status, out = 0, ""
            if without_deps:
                status, out = pip_download(wheels, [str(r) for r in without_deps], constraints, no_deps=True)
            if status == 0:
                status, out = pip_download(wheels, [str(r) for r in requirements], constraints)
            if status == 0:
                return
            # A pinned version without an aarch64 wheel: unpinned, pip takes the newest with one.
            conflicting = {canonicalize_name(n) for n in re.findall(r"requested \(constraint\) ([\w.-]+)==", out)}
            if conflicting and conflicting <= pins.keys():
                for name in conflicting:
                    del pins[name]
                continue
            # A requirement on an SDIST_ONLY distribution: its requirer is fetched without its
            # dependencies, and its other requirements join the resolution.
            missing = re.search(r"satisfies the requirement ([\w.-]+)\S* \(from (?!versions)([\w.-]+)", out)
            if not missing or canonicalize_name(missing.group(1)) not in SDIST_ONLY:
                break
            parent = canonicalize_name(missing.group(2))
            if any(canonicalize_name(r.name) == parent for r in without_deps):
                break
            found = [r for r in requirements if canonicalize_name(r.name) == parent]
            parent_requirement = found[0] if found else Requirement(parent)
            fetched = os.path.join(tmp, parent)
            status, out = pip_download(fetched, [str(parent_requirement)], constraints, no_deps=True)
            if status != 0:
                break
            (wheel,) = [os.path.join(fetched, n) for n in os.listdir(fetched)]
            requirements = [r for r in requirements if canonicalize_name(r.name) != parent]
            requirements += [r for r in wheel_requirements(wheel, parent_requirement.extras)
                             if canonicalize_name(r.name) not in SDIST_ONLY]
            without_deps.append(parent_requirement)
    sys.exit(f"aarch64 site: pip could not resolve the reference for aarch64:\n{out}")


def install_site(site, requirements, lock):
    """The reference's wheels for aarch64, unpacked into `site`; returns the resolved
    `name==version` lines and the notes on what differs from `lock`."""
    pins = {}
    for line in lock.splitlines():
        if "==" in line and not line.startswith("#"):
            pins[canonicalize_name(line.split("==", 1)[0])] = line.strip()
    with tempfile.TemporaryDirectory() as tmp:
        wheels = os.path.join(tmp, "wheels")
        resolve(wheels, requirements, pins)
        resolved = {}
        for name in sorted(os.listdir(wheels)):
            distribution, version = parse_wheel_filename(name)[:2]
            resolved[canonicalize_name(distribution)] = f"{distribution}=={version}"
            with zipfile.ZipFile(os.path.join(wheels, name)) as wheel:
                wheel.extractall(site)
    # Wheels carry no permission bits through `zipfile`: the bundled libraries must be loadable.
    for folder, _, files in os.walk(site):
        for file in files:
            if ".so" in file:
                os.chmod(os.path.join(folder, file), 0o755)
    notes = []
    for name, line in sorted(pins.items()):
        if name not in resolved:
            why = SDIST_ONLY.get(name, "not resolved for aarch64")
            notes.append(f"{line} of the x86-64 lock is absent: no aarch64 wheel ({why})")
        elif resolved[name].split("==")[1] != line.split("==")[1]:
            notes.append(f"{resolved[name]} where the x86-64 lock has {line} (no aarch64 wheel of that version)")
    notes += [f"{line}: not in the x86-64 lock" for name, line in sorted(resolved.items()) if name not in pins]
    return sorted(resolved.values()), notes


def requirement_lines(path):
    with open(path) as f:
        return [line.split("#", 1)[0].strip() for line in f if line.split("#", 1)[0].strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--requirements", required=True, help="the reference's requirements (xtask/python-reference.txt)")
    parser.add_argument("--constraints", required=True, help="the x86-64 reference's lock (.deps/venv/reference.lock)")
    args = parser.parse_args()
    requirements = requirement_lines(args.requirements)
    with open(args.constraints) as f:
        lock = f.read()
    request = {"suite": SUITE, "packages": PACKAGES, "requirements": requirements, "lock": lock,
               "platforms": WHEEL_PLATFORMS, "sdist_only": sorted(SDIST_ONLY)}
    stamp = os.path.join(args.root, "stamp")
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f).get("request") == request:
                return
    shutil.rmtree(args.root, ignore_errors=True)
    os.makedirs(args.root)
    versions = install_sysroot(os.path.join(args.root, "sysroot"))
    resolved, notes = install_site(os.path.join(args.root, "site"), requirements, lock)
    with open(os.path.join(args.root, "site.lock"), "w") as f:
        f.write("\n".join(resolved) + "\n")
    with open(stamp, "w") as f:
        json.dump({"request": request, "debs": versions, "wheels": resolved, "notes": notes}, f, indent=1)
    print(f"aarch64 sysroot: {len(versions)} Debian packages, {len(resolved)} wheels", file=sys.stderr)
    for note in notes:
        print(f"aarch64 site: {note}", file=sys.stderr)


if __name__ == "__main__":
    main()
