//! Element by element: MLX's binary ops and `clip` ([`elementwise`]), its `exp`, `tanh` and
//! `power`, and the tanh GELU built from them ([`gelu`]). Each file is one concept; the crate
//! re-exports them at its root (`kernels::exp`, …).

pub mod elementwise;
pub mod exp;
pub mod gelu;
pub mod power;
pub mod tanh;
