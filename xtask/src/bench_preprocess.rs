//! `cargo xtask bench preprocess`.

use crate::project::Result;

pub fn main(_args: &[String]) -> Result<()> {
    Err("`cargo xtask bench preprocess` is not implemented yet".to_owned())
}
