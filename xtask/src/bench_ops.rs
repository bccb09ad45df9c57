//! `cargo xtask bench ops`.

use crate::project::Result;

pub fn main(_args: &[String]) -> Result<()> {
    Err("`cargo xtask bench ops` is not implemented yet".to_owned())
}
