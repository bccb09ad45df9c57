//! Operations on arrays, as inherent methods of [`Array`](crate::Array).
//!
//! Each wraps one MLX primitive of the same name, runs on the calling thread's current
//! stream, and reports MLX's failures as `Err`. Numeric semantics are MLX's exactly; the
//! parity suite depends on calling the same primitive the reference calls.

mod arithmetic;
mod compare;
mod creation;
mod indexing;
mod linalg;
mod quantized;
mod reduce;
mod shape;
mod unary;

/// Declares unary ops: `name => mlx_function`.
macro_rules! unary_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {
        impl crate::Array {
            $(
                $(#[$doc])*
                #[track_caller]
                pub fn $name(&self) -> crate::Result<crate::Array> {
                    let stream = crate::device::current_stream()?;
                    // SAFETY: the op-call contract of `Array::from_op`: one input, the live `self`,
                    // and this thread's `stream`.
                    $crate::Array::from_op(stringify!($name), |out| unsafe {
                        crate::status::api().$ffi(out, self.as_raw(), stream)
                    })
                }
            )*
        }
    };
}

/// Declares binary ops taking an [`Operand`](crate::Operand): `name => mlx_function`.
macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {
        impl crate::Array {
            $(
                $(#[$doc])*
                #[track_caller]
                pub fn $name(&self, other: impl crate::Operand) -> crate::Result<crate::Array> {
                    let other = other.into_operand(self)?;
                    let stream = crate::device::current_stream()?;
                    // SAFETY: the op-call contract of `Array::from_op`: two inputs, the live `self`
                    // and `other` (owned here), and this thread's `stream`.
                    $crate::Array::from_op(stringify!($name), |out| unsafe {
                        crate::status::api().$ffi(out, self.as_raw(), other.as_raw(), stream)
                    })
                }
            )*
        }
    };
}

pub(crate) use {binary_ops, unary_ops};
