//! Shared pieces of the parity binaries: comparing our outputs with the reference's, and
//! printing the result table.
//!
//! Every parity binary takes a directory the reference (Python) side has written, runs our
//! side on the same inputs, prints one row per comparison, and ends with a machine-readable
//! line `parity-summary: <exact>/<total>` that `cargo xtask parity` adds up.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod compare;
pub mod corpus_suite;
pub mod device;
mod table;
pub mod vision_suite;

pub use compare::{Comparison, compare_arrays, compare_bytes};
pub use table::Table;
