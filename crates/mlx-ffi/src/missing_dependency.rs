//! A library libmlx needs that the dynamic linker cannot find, and what installs it.
//!
//! The dynamic linker opens every `NEEDED` library of libmlx before any of its code runs, so a
//! machine that lacks one fails at `dlopen`, with the linker's message naming the first one it
//! could not find. MLX's CUDA build (the `mlx-cuda-12` wheel) needs the NVIDIA driver's
//! `libcuda.so.1` and the CUDA libraries of the `nvidia-*` wheels, which its rpath looks for
//! in `../../nvidia/*/lib` beside it in `site-packages`: without them it cannot be opened at
//! all, and this module turns that into a sentence that says what is missing and why.

/// The file name of the library the dynamic linker could not find, from its message
/// (`libcuda.so.1: cannot open shared object file: No such file or directory`), unless that
/// library is `opened` itself.
pub(crate) fn missing_library(message: &str, opened: &str) -> Option<String> {
    let (before, _) = message.split_once(": cannot open shared object file")?;
    let library = before.rsplit([' ', ':']).next()?.trim();
    (!library.is_empty() && library != opened).then(|| library.to_owned())
}

/// What installs `library`, for the libraries MLX's CUDA build needs; a generic sentence for
/// any other.
pub(crate) fn provider(library: &str) -> &'static str {
    let stem = library.split(".so").next().unwrap_or(library);
    match stem {
        "libcuda" => {
            "the NVIDIA driver's library: this libmlx is MLX's CUDA build, which runs only on a machine with an \
             NVIDIA GPU and its driver (elsewhere, install the CPU wheels: `pip install \"mlx[cpu]\"`)"
        }
        "libcudart" | "libcublas" | "libcublasLt" | "libcudnn" | "libnccl" | "libnvrtc" | "libcufft"
        | "libcusolver" | "libcusparse" | "libnvJitLink" => {
            "a CUDA library of the `nvidia-*` wheels that `pip install \"mlx[cuda12]\"` installs beside `mlx` \
             (libmlx's rpath looks for them in `../../nvidia/*/lib` of its site-packages)"
        }
        _ => "a library libmlx was linked against; install it where the dynamic linker looks",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_linker_s_message_names_the_missing_library() {
        let message = "libnccl.so.2: cannot open shared object file: No such file or directory";
        assert_eq!(missing_library(message, "/x/libmlx.so").as_deref(), Some("libnccl.so.2"));
        let prefixed = "/x/libmlx.so: libcuda.so.1: cannot open shared object file: No such file or directory";
        assert_eq!(missing_library(prefixed, "/x/libmlx.so").as_deref(), Some("libcuda.so.1"));
        // The file itself, or another failure, is not a missing dependency.
        let itself = "/x/libmlx.so: cannot open shared object file: No such file or directory";
        assert_eq!(missing_library(itself, "/x/libmlx.so"), None);
        assert_eq!(missing_library("/x/libmlx.so: undefined symbol: foo", "/x/libmlx.so"), None);
    }

    #[test]
    fn the_driver_and_the_cuda_wheels_are_named_apart() {
        assert!(provider("libcuda.so.1").contains("NVIDIA driver"));
        assert!(provider("libcublasLt.so.12").contains("mlx[cuda12]"));
        assert!(provider("libcudnn.so.9").contains("nvidia-*"));
        assert!(!provider("libfoo.so.1").contains("NVIDIA"));
    }
}
