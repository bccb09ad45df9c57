//! Our side of `cargo xtask parity vision` (see [`parity::vision_suite`]).
//!
//! Usage: `parity-vision <dir> [--kernels auto|mlx|host] [ignored args]` where `<dir>` holds
//! the reference side's `manifest.json`. `--kernels` is the encoder's [`vision::Kernels`]
//! (default `auto`, as a user gets it; `host` forces the host kernels to prove a build that
//! [`layers::PROVEN_MLX`] does not list). Other arguments are the reference side's, ignored.

use parity::Table;
use std::path::PathBuf;
use std::process::ExitCode;
use vision::Kernels;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first().map(PathBuf::from) else {
        eprintln!("usage: parity-vision <dir> [--kernels auto|mlx|host]");
        return ExitCode::from(2);
    };
    let kernels = match kernels_argument(&args[1..]) {
        Ok(kernels) => kernels,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let title =
        format!("Vision encoders, every stage: ours ({kernels} kernels) vs mlx-vlm 0.7.10 (same libmlx, same BLAS)");
    let mut table = Table::new(&title);
    let run = parity::device::compared_on()
        .map_err(Into::into)
        .and_then(|_| parity::vision_suite::run_manifest(&dir, kernels, &mut table));
    if let Err(e) = run {
        eprintln!("error: {e}");
        table.push_failure("vision suite", &e.to_string());
    }
    if table.finish() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The value of `--kernels` among `args` (`--kernels NAME` or `--kernels=NAME`), else `auto`.
fn kernels_argument(args: &[String]) -> Result<Kernels, String> {
    let mut found = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let value = match arg.strip_prefix("--kernels") {
            Some("") => rest.next().ok_or("--kernels needs a value: auto, mlx or host")?.as_str(),
            Some(tail) => match tail.strip_prefix('=') {
                Some(value) => value,
                None => continue,
            },
            None => continue,
        };
        found = Some(value.parse::<Kernels>().map_err(|e| format!("--kernels: {e}"))?);
    }
    Ok(found.unwrap_or_default())
}
