//! The device a parity run compares on: `PARITY_DEVICE` (`cpu` or `gpu`; `cargo xtask
//! gpu-check` sets `gpu` for both sides), else MLX's default device.
//!
//! Our side runs where a user's encoder runs: on MLX's default device (the GPU of a GPU build
//! where there is one; `vision`'s `Kernels::Auto` then runs MLX's ops). A run that names a
//! device therefore checks that MLX's default is that device, rather than comparing outputs
//! computed on two devices.

use tensor::Device;

/// The environment variable naming the device.
pub const VARIABLE: &str = "PARITY_DEVICE";

/// The device this run compares on: the one [`VARIABLE`] names, which must be MLX's default
/// device here, else MLX's default device.
pub fn compared_on() -> Result<Device, String> {
    let default = Device::default_device().map_err(|e| e.to_string())?;
    match std::env::var(VARIABLE).ok().as_deref() {
        None | Some("") => Ok(default),
        Some(name) => {
            let asked = parse(name)?;
            if asked == default {
                Ok(asked)
            } else {
                Err(format!(
                    "{VARIABLE}={name}, but MLX's default device here is the {default:?} (the reference runs on the \
                     {name}, ours would not)"
                ))
            }
        }
    }
}

fn parse(name: &str) -> Result<Device, String> {
    match name {
        "cpu" => Ok(Device::Cpu),
        "gpu" => Ok(Device::Gpu),
        other => Err(format!("{VARIABLE}={other}: expected cpu or gpu")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_parse() {
        assert_eq!(parse("cpu"), Ok(Device::Cpu));
        assert_eq!(parse("gpu"), Ok(Device::Gpu));
        assert!(parse("cuda").is_err());
    }
}
