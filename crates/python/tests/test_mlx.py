"""The MLX the package runs on: the `mlx` wheel beside it, and only the release it was built for."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gemma_vision
import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_package_runs_on_the_libmlx_of_the_mlx_wheel_beside_it():
    import mlx.core as mx

    wheel_lib = Path(mx.__file__).resolve().parent / "lib"
    assert Path(gemma_vision.mlx_library()) == (wheel_lib / "libmlx.so").resolve()
    assert gemma_vision.mlx_version() == mx.__version__
    # Exactly one libmlx is mapped: ours is the file `mlx.core` loaded.
    maps = Path("/proc/self/maps").read_text().splitlines()
    mapped = {line.split()[-1] for line in maps if line.endswith("libmlx.so")}
    assert mapped == {gemma_vision.mlx_library()}


def test_the_extension_links_no_libmlx():
    dynamic = subprocess.run(
        ["readelf", "-d", gemma_vision._native.__file__], capture_output=True, text=True, check=True
    ).stdout
    needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
    assert needed and not any("mlx" in line for line in needed), needed
    assert "RPATH" not in dynamic and "RUNPATH" not in dynamic


def test_the_wheel_requires_the_mlx_release_it_was_built_against():
    import tomllib

    built = gemma_vision._native.MLX_BUILD_VERSION
    pyproject = tomllib.loads(PYPROJECT.read_text())
    pins = {f"mlx=={built}", f"mlx-cpu=={built}; sys_platform == 'linux'"}
    assert pins <= set(pyproject["project"]["dependencies"])
    # pip's isolated source build compiles against the MLX of its build requirements.
    assert pins <= set(pyproject["build-system"]["requires"])


def fake_mlx_package(root: Path, version: str) -> Path:
    """An `mlx` package whose libmlx is a stub reporting `version` from `mlx::core::version()`."""
    package = root / "mlx"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text("")
    source = root / "version.c"
    source.write_text(f'const char* _ZN3mlx4core7versionEv(void) {{ return "{version}"; }}\n')
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(package / "lib" / "libmlx.so"), str(source)], check=True)
    return root


def import_beside(root: Path) -> subprocess.CompletedProcess:
    """`import gemma_vision` in a fresh interpreter whose `mlx` package is the one in `root`."""
    code = textwrap.dedent(
        """
        import sys
        try:
            import gemma_vision
        except ImportError as e:
            print("ImportError:", e)
            sys.exit(3)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_importing_beside_another_mlx_release_raises_one_import_error_naming_both(tmp_path):
    built = gemma_vision._native.MLX_BUILD_VERSION
    result = import_beside(fake_mlx_package(tmp_path, "0.32.2"))
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    message = result.stdout
    assert "is MLX 0.32.2" in message and f"needs MLX {built}" in message, message
    assert "Traceback" not in result.stderr


def test_importing_beside_an_mlx_without_its_library_says_what_to_install(tmp_path):
    package = tmp_path / "mlx"
    package.mkdir()
    (package / "__init__.py").write_text("")
    result = import_beside(tmp_path)
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    assert "no `mlx.core`" in result.stdout and "mlx[cpu]" in result.stdout, result.stdout


def the_wheel_s_libmlx() -> str:
    import mlx.core as mx

    return str((Path(mx.__file__).resolve().parent / "lib" / "libmlx.so").resolve())


PRINT_LIBRARY = "import gemma_vision\nprint(gemma_vision.mlx_library())\n"


def stray_mlx_folder(parent: Path) -> Path:
    """A folder named `mlx` with no Python in it, as MLX's CPU JIT leaves its kernel cache in
    the temporary directory (and as any project may have one): a portion of the namespace
    package `mlx`, ahead of the wheel's when its parent is first on `sys.path`."""
    folder = parent / "mlx"
    (folder / "lib").mkdir(parents=True)
    return folder


def test_the_package_imports_from_a_directory_holding_an_mlx_folder(tmp_path):
    stray_mlx_folder(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", PRINT_LIBRARY], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == the_wheel_s_libmlx()
    # The stray folder is a portion of `mlx` ahead of the wheel's, which the old rule took.
    probe = "import mlx\nprint(list(mlx.__path__)[0])\n"
    first = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert Path(first.stdout.strip()).resolve() == (tmp_path / "mlx").resolve()


def test_a_script_beside_an_mlx_folder_imports_the_package(tmp_path):
    app = tmp_path / "app"
    stray_mlx_folder(app)
    script = app / "run.py"
    script.write_text(PRINT_LIBRARY)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == the_wheel_s_libmlx()
