//! Our side of `cargo xtask parity vision` (see [`parity::vision_suite`]).
//!
//! Usage: `parity-vision <dir>` where `<dir>` holds the reference side's `manifest.json`.

use parity::Table;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: parity-vision <dir>");
        return ExitCode::from(2);
    };
    let mut table = Table::new("Vision encoders, every stage: ours vs mlx-vlm 0.7.10 (same libmlx, same BLAS)");
    let run = parity::device::compared_on()
        .map_err(Into::into)
        .and_then(|_| parity::vision_suite::run_manifest(&dir, &mut table));
    if let Err(e) = run {
        eprintln!("error: {e}");
        table.push_failure("vision suite", &e.to_string());
    }
    if table.finish() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
