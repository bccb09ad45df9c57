//! Host element types that arrays are built from and read back into.

use crate::Dtype;
use half::{bf16, f16};

/// A plain-old-data host type with a matching MLX dtype.
///
/// Sealed: implemented only for the types below, each of the size and alignment of its
/// dtype's C++ element type. Array constructors hand `&[T]` to MLX as `DTYPE` data on the
/// strength of it, so a type of another layout must not be able to claim a dtype.
pub trait Element: sealed::Sealed + bytemuck::Pod + Send + Sync + 'static {
    /// The dtype of arrays holding this type.
    const DTYPE: Dtype;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! element {
    ($($ty:ty => $dtype:ident),* $(,)?) => {
        $(
            impl sealed::Sealed for $ty {}
            impl Element for $ty { const DTYPE: Dtype = Dtype::$dtype; }
            const _: () = assert!(size_of::<$ty>() == Dtype::$dtype.size());
        )*
    };
}

element! {
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    f32 => F32, f64 => F64, f16 => F16, bf16 => Bf16,
}
