//! Elementwise arithmetic. The second operand may be an array or a weak Rust scalar.

use super::{binary_ops, unary_ops};

binary_ops! {
    /// `self + other`.
    add => mlx_add;
    /// `self - other`.
    sub => mlx_subtract;
    /// `self * other`.
    mul => mlx_multiply;
    /// `self / other` (true division).
    div => mlx_divide;
    /// `floor(self / other)`, MLX's `//`.
    floor_div => mlx_floor_divide;
    /// `self ** other` (MLX `power`; not the same kernel as `square`).
    power => mlx_power;
    /// Elementwise maximum.
    maximum => mlx_maximum;
    /// Elementwise minimum.
    minimum => mlx_minimum;
}

unary_ops! {
    /// `-self`.
    neg => mlx_negative;
}
