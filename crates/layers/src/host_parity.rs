//! [`HostParity`]: whether the host kernels ([`Execution::Host`](crate::Execution::Host)) give
//! the bits of the MLX this process runs on, judged from evidence, not assumed.
//!
//! The host kernels reproduce MLX 0.32.4's CPU primitives as the stock Linux PyPI wheel of the
//! target computes them: on x86-64 every float32 product and sum is rounded separately (that
//! wheel's netlib BLAS and `libmlx` contain no fused multiply-add), on aarch64 each k step is
//! one fused multiply-add (that wheel's BLAS and `libmlx` contract `a*b+c` into `fmadd`), in
//! the k order the kernels keep (`kernels::gemm::TargetMultiplyAdd`). Other builds compute
//! other float32 bits: macOS runs float32 matmuls through Accelerate, and a libmlx built from
//! source may be compiled with other flags. So a libmlx counts as proven only when its
//! architecture, OS, version and file digest are those of a build the parity suite was run on
//! ([`PROVEN_MLX`]: every stage of both encoders against stock mlx-vlm, `cargo xtask parity`
//! on x86-64, `cargo xtask emulate` under `qemu-aarch64`).
//!
//! MLX's CPU JIT compiles the graphs mlx-vlm runs under `mx.compile` (the vision MLP's
//! `gelu_approx`) into one kernel with the `g++` on `PATH`. On x86-64 that kernel gives the bits
//! of the ops run one by one; on aarch64 Linux GCC contracts its float32 `x + 0.044715·x³` into
//! one fused multiply-add. The host kernels compute whichever of the two this process's MLX
//! computes ([`gelu_cubic_term`], decided once per process from [`mlx_cpu_jit`]), so every
//! build of [`PROVEN_MLX`] was proven with the JIT on and with it off. MLX's own ops, which
//! compile that graph as the reference does, give the reference's bits either way.

use kernels::gelu::CubicTerm;
use std::sync::OnceLock;

/// A libmlx build on which the host kernels were shown bit-identical to MLX's own ops, with
/// MLX's CPU JIT on and with it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProvenMlx {
    /// `std::env::consts::ARCH` of the platform.
    pub arch: &'static str,
    /// `std::env::consts::OS` of the platform.
    pub os: &'static str,
    /// `mlx::core::version()`.
    pub version: &'static str,
    /// SHA-256 (lowercase hex) of the libmlx file.
    pub libmlx_sha256: &'static str,
    /// Where that file comes from.
    pub build: &'static str,
}

/// The builds the host kernels are proven on.
pub const PROVEN_MLX: &[ProvenMlx] = &[
    ProvenMlx {
        arch: "x86_64",
        os: "linux",
        version: "0.32.4",
        libmlx_sha256: "20f8ff465a7bbc991e90d87776bc18ee3e0ee772c70e9a320c4f8f31cc614ab7",
        build: "the x86-64 Linux PyPI wheel mlx-cpu 0.32.4",
    },
    ProvenMlx {
        arch: "aarch64",
        os: "linux",
        version: "0.32.4",
        libmlx_sha256: "a8e2beb6cefe62f72c7865c0446d9c68d026f6c95e132d4c3bdde7c2da79f0d2",
        build: "the aarch64 Linux PyPI wheel mlx-cpu 0.32.4",
    },
];

/// Whether MLX's CPU JIT compiles the `mx.compile`d graphs of this process, decided as
/// libmlx 0.32.4 decides it: compilation is on unless `MLX_DISABLE_COMPILE` is set (to
/// anything), and the JIT is available when `g++ --version > /dev/null 2>&1` succeeds through
/// the shell, the command libmlx runs (on the process's `PATH`). Asked once per process, by
/// running that command.
pub fn mlx_cpu_jit() -> bool {
    static JIT: OnceLock<bool> = OnceLock::new();
    *JIT.get_or_init(|| {
        std::env::var_os("MLX_DISABLE_COMPILE").is_none()
            && std::process::Command::new("/bin/sh")
                .args(["-c", "g++ --version > /dev/null 2>&1"])
                .stdin(std::process::Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
    })
}

/// The float32 cubic term of mlx-vlm's `mx.compile`d `gelu_approx` as this process's MLX
/// computes it, which the host kernels' GELU (`kernels::gelu::gelu_approx_mul`) follows:
/// [`CubicTerm::Fused`] on aarch64 Linux while MLX's CPU JIT is on ([`mlx_cpu_jit`]), where the
/// JIT's kernel is built by GCC, which contracts `x + 0.044715·cube` into one `fmadd`;
/// [`CubicTerm::Separate`] otherwise (the ops run one by one with the JIT off; x86-64's JIT
/// kernel does not contract). Decided once per process. bf16 does not depend on it.
pub fn gelu_cubic_term() -> CubicTerm {
    static TERM: OnceLock<CubicTerm> = OnceLock::new();
    *TERM.get_or_init(|| cubic_term_for(std::env::consts::ARCH, std::env::consts::OS, mlx_cpu_jit))
}

/// [`gelu_cubic_term`] for a platform; `cpu_jit` is asked only where the answer depends on it.
fn cubic_term_for(arch: &str, os: &str, cpu_jit: impl FnOnce() -> bool) -> CubicTerm {
    if (arch, os) == ("aarch64", "linux") && cpu_jit() { CubicTerm::Fused } else { CubicTerm::Separate }
}

/// Whether this process's MLX is one the host kernels reproduce, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostParity {
    /// The libmlx is one of [`PROVEN_MLX`].
    Proven(ProvenMlx),
    /// Anything else; the reason names what did not match.
    Unproven { reason: String },
}

impl HostParity {
    /// The verdict for this process: its platform and the libmlx it opened (opening MLX if it is
    /// not open yet; the file is hashed once per process).
    pub fn here() -> &'static HostParity {
        static HERE: OnceLock<HostParity> = OnceLock::new();
        HERE.get_or_init(|| {
            let facts = tensor::info::mlx_version().and_then(|v| Ok((v, tensor::info::mlx_library_sha256()?)));
            match facts {
                Ok((version, digest)) => Self::judge(std::env::consts::ARCH, std::env::consts::OS, &version, &digest),
                Err(e) => HostParity::Unproven { reason: format!("the MLX library could not be identified: {e}") },
            }
        })
    }

    /// The verdict for a platform and a libmlx, against [`PROVEN_MLX`].
    pub fn judge(arch: &str, os: &str, version: &str, libmlx_sha256: &str) -> HostParity {
        let proven = PROVEN_MLX.iter().find(|p| p.libmlx_sha256 == libmlx_sha256);
        if let Some(proven) = proven.filter(|p| (p.arch, p.os, p.version) == (arch, os, version)) {
            return HostParity::Proven(*proven);
        }
        let platform = PROVEN_MLX.iter().find(|p| (p.arch, p.os) == (arch, os));
        let reason = match platform {
            None => format!(
                "the host kernels reproduce no stock MLX build on {arch} {os} (proven: {})",
                PROVEN_MLX.iter().map(|p| format!("{} {}", p.arch, p.os)).collect::<Vec<_>>().join(", ")
            ),
            Some(p) if p.version != version => {
                format!("MLX {version} is not the release the host kernels were proven on ({})", p.version)
            }
            Some(p) => format!(
                "this libmlx (sha256 {}) is not {}, the build the host kernels were proven on",
                libmlx_sha256.get(..12).unwrap_or(libmlx_sha256),
                p.build
            ),
        };
        HostParity::Unproven { reason }
    }

    /// Whether the host kernels give this MLX's bits.
    pub fn is_proven(&self) -> bool {
        matches!(self, HostParity::Proven(_))
    }
}

impl std::fmt::Display for HostParity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostParity::Proven(p) => write!(f, "proven bit-identical on {}", p.build),
            HostParity::Unproven { reason } => f.write_str(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86: ProvenMlx = PROVEN_MLX[0];
    const AARCH64: ProvenMlx = PROVEN_MLX[1];

    fn jit(on: bool) -> impl FnOnce() -> bool {
        move || on
    }

    fn never_asked() -> bool {
        panic!("the JIT was asked about where no proof depends on it")
    }

    #[test]
    fn only_the_proven_file_on_its_own_platform_and_release_is_proven() {
        let judge = |arch, version, digest: &str| HostParity::judge(arch, "linux", version, digest);
        assert_eq!(judge("x86_64", "0.32.4", X86.libmlx_sha256), HostParity::Proven(X86));
        let other_file = judge("x86_64", "0.32.4", &"0".repeat(64));
        assert!(other_file.to_string().contains("is not the x86-64 Linux PyPI wheel mlx-cpu 0.32.4"), "{other_file}");
        let other_release = judge("x86_64", "0.33.0", X86.libmlx_sha256);
        assert!(other_release.to_string().contains("MLX 0.33.0 is not the release"), "{other_release}");
        let swapped = judge("aarch64", "0.32.4", X86.libmlx_sha256);
        assert!(swapped.to_string().contains("is not the aarch64 Linux PyPI wheel"), "{swapped}");
        let macos = HostParity::judge("aarch64", "macos", "0.32.4", "ab");
        assert!(macos.to_string().contains("no stock MLX build on aarch64 macos"), "{macos}");
    }

    #[test]
    fn both_linux_wheels_are_proven() {
        for proven in [X86, AARCH64] {
            let verdict = HostParity::judge(proven.arch, "linux", "0.32.4", proven.libmlx_sha256);
            assert_eq!(verdict, HostParity::Proven(proven));
            assert!(verdict.is_proven());
        }
    }

    #[test]
    fn the_gelu_fuses_its_cubic_term_only_where_gcc_builds_the_jit_kernel_for_aarch64() {
        assert_eq!(cubic_term_for("aarch64", "linux", jit(true)), CubicTerm::Fused);
        assert_eq!(cubic_term_for("aarch64", "linux", jit(false)), CubicTerm::Separate);
        assert_eq!(cubic_term_for("x86_64", "linux", never_asked), CubicTerm::Separate);
        assert_eq!(cubic_term_for("aarch64", "macos", never_asked), CubicTerm::Separate);
        let here = gelu_cubic_term();
        if !cfg!(all(target_arch = "aarch64", target_os = "linux")) {
            assert_eq!(here, CubicTerm::Separate);
        }
        assert_eq!(gelu_cubic_term(), here);
    }
}
