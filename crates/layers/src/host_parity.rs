//! [`HostParity`]: whether the host kernels ([`Execution::Host`](crate::Execution::Host)) give
//! the bits of the MLX this process runs on, judged from evidence, not assumed.
//!
//! The host kernels reproduce one arithmetic: MLX 0.32.4's CPU primitives as the x86-64 Linux
//! PyPI wheel computes them (its netlib BLAS and `libmlx` contain no fused multiply-add, so
//! every product and sum is rounded separately, in the k order the kernels keep). Another
//! build computes other float32 bits: the aarch64 Linux wheel contracts `a*b+c` into `fmadd`
//! (its BLAS and libmlx), macOS runs float32 matmuls through Accelerate, and a libmlx built
//! from source may be compiled with other flags. So a libmlx counts as proven only when its
//! architecture, OS, version and file digest are those of a build the parity suite
//! (`cargo xtask parity`, every stage against stock mlx-vlm) was run on: [`PROVEN_MLX`].

use std::sync::OnceLock;

/// A libmlx build on which the host kernels were shown bit-identical to MLX's own ops.
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
pub const PROVEN_MLX: &[ProvenMlx] = &[ProvenMlx {
    arch: "x86_64",
    os: "linux",
    version: "0.32.4",
    libmlx_sha256: "20f8ff465a7bbc991e90d87776bc18ee3e0ee772c70e9a320c4f8f31cc614ab7",
    build: "the x86-64 Linux PyPI wheel mlx-cpu 0.32.4",
}];

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

    #[test]
    fn only_the_proven_file_on_its_own_platform_and_release_is_proven() {
        assert_eq!(HostParity::judge("x86_64", "linux", "0.32.4", X86.libmlx_sha256), HostParity::Proven(X86));
        let other_file = HostParity::judge("x86_64", "linux", "0.32.4", &"0".repeat(64));
        assert!(other_file.to_string().contains("is not the x86-64 Linux PyPI wheel mlx-cpu 0.32.4"), "{other_file}");
        let other_release = HostParity::judge("x86_64", "linux", "0.33.0", X86.libmlx_sha256);
        assert!(other_release.to_string().contains("MLX 0.33.0 is not the release"), "{other_release}");
        let aarch64 = HostParity::judge("aarch64", "linux", "0.32.4", X86.libmlx_sha256);
        assert!(aarch64.to_string().contains("no stock MLX build on aarch64 linux"), "{aarch64}");
        let macos = HostParity::judge("aarch64", "macos", "0.32.4", "ab");
        assert!(!macos.is_proven(), "{macos}");
    }
}
