//! Opening MLX at run time: libmlx from an MLX install, then the mlx-c library this crate
//! embeds, whose functions fill the [`MlxC`] table.
//!
//! A process opens MLX once, on first use: [`library`] from the default location, or
//! [`open_from`] from a directory the caller names (the Python package names the `mlx` wheel
//! beside it). The default is the `lib/` of `MLX_DIR` when that variable is set, else the
//! directory this crate was built against ([`BUILD_LIB_DIR`]). Before any mlx-c code is
//! loaded, libmlx's own `mlx::core::version()` must equal the version of the headers mlx-c
//! was compiled against ([`BUILD_VERSION`]): the C++ ABI changes between MLX releases, so any
//! other libmlx is refused with [`LoadError::Version`] rather than loaded. Nothing is ever
//! unloaded.

use crate::MlxC;
use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The MLX version (`major.minor.patch`) of the headers mlx-c was compiled against; the
/// run-time libmlx must be this version.
pub const BUILD_VERSION: &str = env!("MLX_FFI_VERSION");

/// The libmlx directory of the MLX install this crate was built against: where [`library`]
/// looks unless `MLX_DIR` is set.
pub const BUILD_LIB_DIR: &str = env!("MLX_FFI_LIB_DIR");

/// File name of libmlx in an install's `lib/`.
pub const LIBMLX: &str = if cfg!(target_os = "macos") { "libmlx.dylib" } else { "libmlx.so" };

/// The mangled name of `const char* mlx::core::version()` (Itanium C++ ABI).
const VERSION_SYMBOL: &[u8] = b"_ZN3mlx4core7versionEv\0";

/// mlx-c, built by this crate's build script against [`BUILD_VERSION`]'s headers.
static MLX_C: &[u8] = include_bytes!(env!("MLX_FFI_MLX_C"));

/// Why MLX could not be opened. Each names the file and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// No libmlx where it was looked for.
    #[error(
        "no MLX library at {}: install the MLX wheels (`pip install \"mlx[cpu]=={BUILD_VERSION}\"` on Linux) or \
         set MLX_DIR to an MLX {BUILD_VERSION} install",
        path.display()
    )]
    NotFound { path: PathBuf },
    /// The dynamic linker could not open a library.
    #[error("cannot open {}: {message}", path.display())]
    Open { path: PathBuf, message: String },
    /// libmlx needs `library`, which the dynamic linker cannot find (MLX's CUDA build on a
    /// machine without the NVIDIA driver, or without the CUDA wheels): nothing of it ran.
    #[error(
        "cannot open {}: it needs {library}, which the dynamic linker cannot find; {library} is {}",
        path.display(),
        crate::missing_dependency::provider(library)
    )]
    MissingDependency { path: PathBuf, library: String, message: String },
    /// libmlx is another release than the one mlx-c was compiled against.
    #[error(
        "{} is MLX {found}, but this build of mlx-c needs MLX {BUILD_VERSION} (their C++ ABIs differ): install \
         `mlx=={BUILD_VERSION}` or rebuild against MLX {found}",
        path.display()
    )]
    Version { path: PathBuf, found: String },
    /// The embedded mlx-c library could not be loaded.
    #[error("cannot load mlx-c: {message}")]
    MlxC { message: String },
    /// The process already opened another libmlx file (a process runs on one).
    #[error("this process already opened {}; it cannot also open {}", loaded.display(), requested.display())]
    Conflict { loaded: PathBuf, requested: PathBuf },
}

/// MLX, opened: the mlx-c function table and what it runs on.
#[derive(Debug)]
pub struct Library {
    api: MlxC,
    libmlx: PathBuf,
    version: String,
}

impl Library {
    /// The mlx-c functions.
    pub fn api(&self) -> &MlxC {
        &self.api
    }

    /// The libmlx file this process runs on (canonical path).
    pub fn libmlx(&self) -> &Path {
        &self.libmlx
    }

    /// libmlx's version, as `mlx::core::version()` reports it.
    pub fn version(&self) -> &str {
        &self.version
    }
}

impl std::fmt::Debug for MlxC {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MlxC { .. }")
    }
}

static LIBRARY: OnceLock<Library> = OnceLock::new();
/// The first libmlx file the process mapped (opened, even if refused), guarded by the lock
/// that serialises opening. A refused libmlx may stay mapped (C++ libraries often cannot be
/// unloaded), and mlx-c would then bind to it by its name: no other libmlx is opened after it.
static MAPPED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// MLX, opened on the first successful call from the default location (`$MLX_DIR/lib`, else
/// [`BUILD_LIB_DIR`]). A failure leaves nothing open: a later call tries again.
pub fn library() -> Result<&'static Library, LoadError> {
    if let Some(library) = LIBRARY.get() {
        return Ok(library);
    }
    let dir = std::env::var_os("MLX_DIR")
        .map(|dir| PathBuf::from(dir).join("lib"))
        .unwrap_or_else(|| PathBuf::from(BUILD_LIB_DIR));
    open_once(&dir)
}

/// MLX, opened from the libmlx in `lib_dir` (or the one already open, if it is that file).
pub fn open_from(lib_dir: &Path) -> Result<&'static Library, LoadError> {
    open_once(lib_dir)
}

/// MLX if it has been opened.
pub fn loaded() -> Option<&'static Library> {
    LIBRARY.get()
}

fn open_once(lib_dir: &Path) -> Result<&'static Library, LoadError> {
    let mut mapped = MAPPED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let requested = lib_dir.join(LIBMLX);
    let Ok(file) = requested.canonicalize() else { return Err(LoadError::NotFound { path: requested }) };
    if let Some(first) = mapped.as_ref().filter(|first| **first != file) {
        return Err(LoadError::Conflict { loaded: first.clone(), requested: file });
    }
    if let Some(library) = LIBRARY.get() {
        return Ok(library);
    }
    *mapped = Some(file.clone());
    let library = open(&file)?;
    Ok(LIBRARY.get_or_init(|| library))
}

/// Opens the libmlx file `libmlx` (globally, so that its symbols serve the mlx-c library),
/// checks its version, then loads the embedded mlx-c and resolves every function of the table.
fn open(libmlx: &Path) -> Result<Library, LoadError> {
    let libmlx = libmlx.to_path_buf();
    let flags = libc::RTLD_NOW | libc::RTLD_GLOBAL;
    // SAFETY: opening runs libmlx's initialisers, which the MLX wheels run the same way when
    // Python imports `mlx.core`; the handle is kept for the whole process (never unloaded).
    let handle = unsafe { libloading::os::unix::Library::open(Some(&libmlx), flags) }.map_err(|e| {
        let message = e.to_string();
        match crate::missing_dependency::missing_library(&message, &libmlx.to_string_lossy()) {
            Some(library) => LoadError::MissingDependency { path: libmlx.clone(), library, message },
            None => LoadError::Open { path: libmlx.clone(), message },
        }
    })?;
    let version = read_version(&handle, &libmlx)?;
    if numeric_version(&version) != BUILD_VERSION {
        return Err(LoadError::Version { path: libmlx, found: version });
    }
    std::mem::forget(handle);
    let mlx_c = open_mlx_c()?;
    // SAFETY: `mlx_c` is the library this crate's build script built from mlx-c's sources and
    // generated the table's signatures from; every symbol is required (`from_library` fails
    // if one is missing), and the library stays loaded inside the table for the process.
    let api = unsafe { MlxC::from_library(mlx_c) }.map_err(|e| LoadError::MlxC { message: e.to_string() })?;
    Ok(Library { api, libmlx, version })
}

/// libmlx's `mlx::core::version()`.
fn read_version(handle: &libloading::os::unix::Library, path: &Path) -> Result<String, LoadError> {
    // SAFETY: the symbol is `const char* mlx::core::version()`: no arguments, a pointer result,
    // which the C calling convention passes exactly as C++ does; it returns a pointer to a
    // static NUL-terminated string (copied out below).
    let text = unsafe {
        let version = handle
            .get::<unsafe extern "C" fn() -> *const c_char>(VERSION_SYMBOL)
            .map_err(|e| LoadError::Open { path: path.to_path_buf(), message: format!("not an MLX library: {e}") })?;
        let text = version();
        if text.is_null() {
            return Err(LoadError::Open { path: path.to_path_buf(), message: "mlx::core::version() is null".into() });
        }
        CStr::from_ptr(text).to_string_lossy().into_owned()
    };
    Ok(text)
}

/// `major.minor.patch` of a version that may carry a suffix (`0.32.4.dev20260101+abc`).
fn numeric_version(version: &str) -> String {
    version.split('.').take(3).collect::<Vec<_>>().join(".")
}

/// Loads the embedded mlx-c: from the file the build script wrote, where it still holds the
/// same bytes (no copy is written then, which also serves processes that may not write files,
/// e.g. under a file-size limit); else from an anonymous in-memory file (Linux); else from a
/// file written once under the temporary directory, named by its content.
fn open_mlx_c() -> Result<libloading::Library, LoadError> {
    let built = Path::new(env!("MLX_FFI_MLX_C"));
    if std::fs::read(built).is_ok_and(|bytes| bytes == MLX_C) {
        let flags = libc::RTLD_NOW | libc::RTLD_LOCAL;
        // SAFETY: as in `open_from_memory`: the file holds the embedded mlx-c, compared byte
        // for byte just above.
        let opened = unsafe { libloading::os::unix::Library::open(Some(built), flags) };
        if let Ok(library) = opened {
            return Ok(library.into());
        }
    }
    #[cfg(target_os = "linux")]
    if let Ok(library) = open_from_memory() {
        return Ok(library);
    }
    open_from_file()
}

#[cfg(target_os = "linux")]
fn open_from_memory() -> Result<libloading::Library, LoadError> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let fail = |message: String| LoadError::MlxC { message };
    // SAFETY: the name is a NUL-terminated literal; the new descriptor is owned by `file` below.
    let fd = unsafe { libc::memfd_create(c"mlx_c".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(fail(format!("memfd_create: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(MLX_C).map_err(|e| fail(format!("writing to memfd: {e}")))?;
    let path = format!("/proc/self/fd/{fd}");
    // SAFETY: the file holds the embedded mlx-c library (see `open`); its initialisers only set
    // up mlx-c's globals. The mapping outlives the descriptor, which `file` closes on return.
    unsafe { libloading::os::unix::Library::open(Some(&path), libc::RTLD_NOW | libc::RTLD_LOCAL) }
        .map(Into::into)
        .map_err(|e| fail(e.to_string()))
}

fn open_from_file() -> Result<libloading::Library, LoadError> {
    let fail = |message: String| LoadError::MlxC { message };
    let name = if cfg!(target_os = "macos") { "libmlx_c.dylib" } else { "libmlx_c.so" };
    let dir = std::env::temp_dir().join(format!("mlx-ffi-{}-{:016x}", BUILD_VERSION, content_hash(MLX_C)));
    let path = dir.join(name);
    if std::fs::read(&path).map_or(true, |bytes| bytes != MLX_C) {
        std::fs::create_dir_all(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
        let partial = dir.join(format!("{name}.{}", std::process::id()));
        std::fs::write(&partial, MLX_C).map_err(|e| fail(format!("{}: {e}", partial.display())))?;
        std::fs::rename(&partial, &path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    }
    // SAFETY: as in `open_from_memory`: the file is the embedded mlx-c, compared byte for byte.
    unsafe { libloading::os::unix::Library::open(Some(&path), libc::RTLD_NOW | libc::RTLD_LOCAL) }
        .map(Into::into)
        .map_err(|e| fail(format!("{}: {e}", path.display())))
}

/// FNV-1a over `bytes`: names the on-disk copy (not a security boundary: the copy is compared
/// with the embedded bytes before it is used).
fn content_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_suffix_is_dropped() {
        assert_eq!(numeric_version("0.32.4"), "0.32.4");
        assert_eq!(numeric_version("0.32.4.dev20260101+abc"), "0.32.4");
    }
}
