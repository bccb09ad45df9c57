//! [`Kernels`]: who runs the encoder's ops, its one table of names, and the
//! [`layers::Execution`] it becomes when an encoder is loaded.

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Who runs the encoder's ops.
///
/// Spelled `auto`, `mlx` and `host` wherever a user writes it (the parity binaries'
/// `--kernels`). Chosen once, when the encoder is loaded, where it becomes the
/// [`layers::Execution`] of its weights.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Kernels {
    /// On MLX's CPU backend, the `kernels` crate's host kernels for every hot op (matmuls,
    /// quantized matmuls, attention, norms, GELU: [`layers::Execution::Host`]), over every
    /// core, when [`layers::HostParity::here`] finds this MLX build among those the kernels are
    /// proven to reproduce; on an unproven CPU build (macOS, a libmlx built from source) and on
    /// other backends (Metal, CUDA), MLX's own ops.
    /// Either way the reference's bits.
    #[default]
    Auto,
    /// MLX's ops everywhere ([`layers::Execution::Mlx`]), the reference's op graph as is.
    Mlx,
    /// The host kernels on MLX's CPU backend whatever [`layers::HostParity`] says: for proving
    /// a build, i.e. running the parity suite on an MLX build not (yet) in
    /// [`layers::PROVEN_MLX`]. On a build where they are not proven, the bits may differ from
    /// the reference's. Where MLX's default device is not the CPU, loading is refused
    /// ([`Error::Input`]).
    Host,
}

impl Kernels {
    /// Every choice, in the order help texts list them.
    pub const ALL: [Kernels; 3] = [Kernels::Auto, Kernels::Mlx, Kernels::Host];

    /// The name: `auto`, `mlx` or `host`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kernels::Auto => "auto",
            Kernels::Mlx => "mlx",
            Kernels::Host => "host",
        }
    }
}

impl fmt::Display for Kernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a [`Kernels`] choice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernels must be \"auto\", \"mlx\" or \"host\", got {0:?}")]
pub struct UnknownKernels(pub String);

impl FromStr for Kernels {
    type Err = UnknownKernels;

    fn from_str(name: &str) -> Result<Kernels, UnknownKernels> {
        Kernels::ALL.into_iter().find(|k| k.as_str() == name).ok_or_else(|| UnknownKernels(name.to_owned()))
    }
}

/// Who runs the ops under `kernels`, and why, in words (`inspect` shows it).
pub(crate) fn execution(kernels: Kernels) -> Result<(layers::Execution, String)> {
    if kernels == Kernels::Mlx {
        return Ok((layers::Execution::Mlx, "MLX's ops, as asked".to_owned()));
    }
    let device = tensor::Device::default_device()?;
    if device != tensor::Device::Cpu {
        if kernels == Kernels::Host {
            return Err(Error::input(format!(
                "the host kernels were asked for, but MLX's default device is the {device:?}: they run on MLX's CPU \
                 backend only"
            )));
        }
        return Ok((layers::Execution::Mlx, format!("MLX's ops on MLX's default device ({device:?})")));
    }
    let parity = layers::HostParity::here();
    Ok(match (kernels, parity.is_proven()) {
        (Kernels::Host, _) => (layers::Execution::Host, format!("the host kernels, as asked ({parity})")),
        (_, true) => (layers::Execution::Host, format!("the host kernels, {parity}")),
        (_, false) => (layers::Execution::Mlx, format!("MLX's ops: {parity}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back() {
        for kernels in Kernels::ALL {
            assert_eq!(kernels.as_str().parse::<Kernels>(), Ok(kernels));
            assert_eq!(kernels.to_string(), kernels.as_str());
        }
        let unknown = "avx".parse::<Kernels>().unwrap_err();
        assert_eq!(unknown.to_string(), "kernels must be \"auto\", \"mlx\" or \"host\", got \"avx\"");
    }
}
