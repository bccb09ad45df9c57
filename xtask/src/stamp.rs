//! The stamp files of idempotent setup steps: a directory a step made records the recipe it was
//! made from (`.xtask-stamp`), and the step is skipped while the recipe is unchanged.

use project::Result;
use std::fs;
use std::path::Path;

const STAMP: &str = ".xtask-stamp";

/// Whether `dir` was made from `recipe`.
pub(crate) fn stamp_matches(dir: &Path, recipe: &str) -> bool {
    fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s == recipe)
}

/// Records that `dir` was made from `recipe`.
pub(crate) fn write_stamp(dir: &Path, recipe: &str) -> Result<()> {
    fs::write(dir.join(STAMP), recipe).map_err(|e| format!("writing {}: {e}", dir.join(STAMP).display()))
}
