//! `cargo xtask bench e2e`.

use crate::project::Result;

pub fn main(_args: &[String]) -> Result<()> {
    Err("`cargo xtask bench e2e` is not implemented yet".to_owned())
}
