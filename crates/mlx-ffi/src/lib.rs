//! Bindings to mlx-c, the C API of Apple's MLX.
//!
//! The build script compiles mlx-c into a shared library and embeds it here; nothing links
//! against libmlx at build time. At run time [`library`] (or [`open_from`]) opens libmlx,
//! refuses it unless it is the MLX release mlx-c was compiled against, loads the embedded
//! mlx-c and returns the [`MlxC`] table of every mlx-c function ([`Library::api`]).
//!
//! Everything in the table is `unsafe` and unmanaged: handles must be freed by their `*_free`
//! function, and every fallible call reports failure through its `int` status and the
//! process-wide error handler (`mlx_set_error_handler`). The `tensor` crate is the only
//! intended user; it wraps these handles in RAII types and statuses in `Result`s.
//! [`blas`] says which library serves MLX's float32 matmuls.
//!
//! # Example
//!
//! ```
//! // libmlx and the embedded mlx-c, opened once per process.
//! let library = gemma_vision_mlx_ffi::library()?;
//! assert_eq!(library.version(), gemma_vision_mlx_ffi::BUILD_VERSION);
//! assert!(library.libmlx().exists());
//! # Ok::<(), gemma_vision_mlx_ffi::LoadError>(())
//! ```
#![allow(unsafe_code, reason = "this crate is the FFI boundary")]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub use bindings::*;

/// bindgen's output (mlx-c's types and the [`MlxC`] function table), kept in its own module so
/// that the allowances it needs stay off the hand-written modules, which get the workspace
/// lints, clippy and the crate's `unsafe` documentation lints in full.
///
/// The two documentation lints are allowed here alone: the file is regenerated from mlx-c's
/// headers on every build, so no comment written into it would survive, and it holds only
/// `#[repr(C)]` types, compile-time layout checks and the table's forwarding methods; the
/// contracts of the functions are mlx-c's documentation.
/// Each call into it is an `unsafe` block of the `tensor` crate, documented there.
mod bindings {
    #![allow(
        non_camel_case_types,
        non_snake_case,
        non_upper_case_globals,
        missing_debug_implementations,
        unused_qualifications,
        unsafe_op_in_unsafe_fn,
        clippy::all,
        clippy::undocumented_unsafe_blocks,
        clippy::missing_safety_doc,
        reason = "bindgen output follows C naming and layout, and is regenerated on every build"
    )]

    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}

pub mod blas;
mod library;
mod missing_dependency;

pub use library::{BUILD_LIB_DIR, BUILD_VERSION, LIBMLX, Library, LoadError, library, loaded, open_from};
