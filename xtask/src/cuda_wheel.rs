//! MLX's CUDA build as the `mlx-cuda-12` wheel ships it, unpacked into
//! `.deps/mlx-cuda-12-<version>/` for builds that need only its headers and libmlx (no GPU, no
//! CUDA libraries): `cargo xtask cuda-build`.
//!
//! The wheel is fetched with the venv's pip (`pip download --no-deps --only-binary :all:`, its
//! platform tag named so a host with an older glibc fetches it too), its SHA-256 checked
//! against the pinned one, and only what a build reads unpacked (MLX's headers `mlx/include/mlx`,
//! `mlx/lib/libmlx.so` and the BLAS/LAPACK copies of `mlx_cuda_12.libs/`, ~140 MB of the
//! wheel's 171 MB: CUTLASS, CuTe and CCCL's headers are for the CUDA backend's own sources)
//! into a scratch directory renamed into place, with a stamp; the wheel file is deleted after.
//! A second run costs nothing.
//!
//! The layout is the wheel's `site-packages` one (`mlx/` beside `mlx_cuda_12.libs/`), so
//! libmlx's rpath finds the BLAS copies; the CUDA libraries it also names (`libcuda.so.1`, the
//! driver's, and those of the `nvidia-*` wheels) are not fetched.

use crate::corpus::{file_sha256, fresh_dir};
use crate::stamp::{stamp_matches, write_stamp};
use project::{Result, cmd, deps, python, run};
use std::fs;
use std::path::{Path, PathBuf};

/// The wheel: the MLX release the project is built against, CUDA 12.
pub const VERSION: &str = "0.32.4";
const FILE: &str = "mlx_cuda_12-0.32.4-py3-none-manylinux_2_35_x86_64.whl";
const PLATFORM: &str = "manylinux_2_35_x86_64";
/// SHA-256 of [`FILE`] (PyPI's digest of the file).
const SHA256: &str = "f385c7af7c1f63a9d6ce3e442e1c9ba881c881bcb45c6534ff8155b359da47e5";
/// The wheel's members a build reads.
const MEMBERS: [&str; 3] = ["mlx/include/mlx/", "mlx/lib/libmlx.so", "mlx_cuda_12.libs/"];

/// Unpacks [`MEMBERS`] of the wheel `argv[1]` into `argv[2]`.
const UNPACK: &str = "import sys, zipfile\n\
    wheel, dest, prefixes = sys.argv[1], sys.argv[2], tuple(sys.argv[3:])\n\
    with zipfile.ZipFile(wheel) as z:\n\
    \x20   z.extractall(dest, [n for n in z.namelist() if n.startswith(prefixes)])\n";

/// `.deps/mlx-cuda-12-<version>`: the unpacked wheel.
fn root() -> PathBuf {
    deps().join(format!("mlx-cuda-12-{VERSION}"))
}

/// The MLX install of the wheel (`include/`, `lib/libmlx.so`): what `MLX_DIR` names.
pub fn mlx_dir() -> PathBuf {
    root().join("mlx")
}

fn recipe() -> String {
    format!("{FILE} sha256 {SHA256}\nmembers {}\n", MEMBERS.join(" "))
}

/// Makes [`mlx_dir`] hold the wheel's MLX, fetching it when it is not there yet; returns it.
pub fn ensure() -> Result<PathBuf> {
    let root = root();
    let recipe = recipe();
    if stamp_matches(&root, &recipe) && mlx_dir().join("lib/libmlx.so").is_file() {
        return Ok(mlx_dir());
    }
    eprintln!("cuda-build: fetching {FILE} (89 MB) from PyPI into {}", root.display());
    let download = fresh_dir(&deps().join(".download-mlx-cuda-12"))?;
    let mut pip = cmd(python(), &["-m", "pip", "download", "--disable-pip-version-check", "--no-deps"]);
    pip.args(["--only-binary", ":all:", "--platform", PLATFORM, &format!("mlx-cuda-12=={VERSION}"), "-d"]);
    run(pip.arg(&download))?;
    let wheel = download.join(FILE);
    let digest = file_sha256(&wheel)?;
    if digest != SHA256 {
        let _ = fs::remove_dir_all(&download);
        return Err(format!("{}: sha256 {digest}, expected {SHA256}", wheel.display()));
    }
    let staging = fresh_dir(&deps().join(".unpack-mlx-cuda-12"))?;
    run(cmd(python(), &["-c", UNPACK]).arg(&wheel).arg(&staging).args(MEMBERS))?;
    let _ = fs::remove_dir_all(&download);
    install(&staging, &root)?;
    write_stamp(&root, &recipe)?;
    Ok(mlx_dir())
}

/// Moves the unpacked `staging` to `root` (replacing what is there).
fn install(staging: &Path, root: &Path) -> Result<()> {
    if !staging.join("mlx/include/mlx/mlx.h").is_file() || !staging.join("mlx/lib/libmlx.so").is_file() {
        return Err(format!("{FILE} unpacked without mlx/include/mlx/mlx.h or mlx/lib/libmlx.so"));
    }
    if root.exists() {
        fs::remove_dir_all(root).map_err(|e| format!("replacing {}: {e}", root.display()))?;
    }
    fs::rename(staging, root).map_err(|e| format!("moving the unpacked wheel into {}: {e}", root.display()))
}
