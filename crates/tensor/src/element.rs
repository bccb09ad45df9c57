//! Host element types that arrays are built from and read back into.

use crate::Dtype;
use half::{bf16, f16};

/// A plain-old-data host type with a matching MLX dtype.
pub trait Element: bytemuck::Pod + Send + Sync + 'static {
    /// The dtype of arrays holding this type.
    const DTYPE: Dtype;
}

macro_rules! element {
    ($($ty:ty => $dtype:ident),* $(,)?) => {
        $(impl Element for $ty { const DTYPE: Dtype = Dtype::$dtype; })*
    };
}

element! {
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    f32 => F32, f64 => F64, f16 => F16, bf16 => Bf16,
}
