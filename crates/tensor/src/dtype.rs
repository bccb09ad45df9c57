//! Element types of MLX arrays.

use crate::{Error, Result};
use mlx_ffi as ffi;
use std::fmt;

/// The element type of an [`Array`](crate::Array).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    F32,
    F64,
    Bf16,
    /// complex64: produced by no operation of this crate, listed so every MLX dtype has a name.
    C64,
}

impl Dtype {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Dtype::Bool | Dtype::U8 | Dtype::I8 => 1,
            Dtype::U16 | Dtype::I16 | Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::U32 | Dtype::I32 | Dtype::F32 => 4,
            Dtype::U64 | Dtype::I64 | Dtype::F64 | Dtype::C64 => 8,
        }
    }

    /// Floating point (inexact) types: f16, bf16, f32, f64.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::Bf16 | Dtype::F32 | Dtype::F64)
    }

    /// The safetensors name of this dtype (`"BF16"`, `"F32"`, …).
    pub fn safetensors_name(self) -> &'static str {
        match self {
            Dtype::Bool => "BOOL",
            Dtype::U8 => "U8",
            Dtype::U16 => "U16",
            Dtype::U32 => "U32",
            Dtype::U64 => "U64",
            Dtype::I8 => "I8",
            Dtype::I16 => "I16",
            Dtype::I32 => "I32",
            Dtype::I64 => "I64",
            Dtype::F16 => "F16",
            Dtype::F32 => "F32",
            Dtype::F64 => "F64",
            Dtype::Bf16 => "BF16",
            Dtype::C64 => "C64",
        }
    }

    pub(crate) fn to_raw(self) -> ffi::mlx_dtype {
        match self {
            Dtype::Bool => ffi::MLX_BOOL,
            Dtype::U8 => ffi::MLX_UINT8,
            Dtype::U16 => ffi::MLX_UINT16,
            Dtype::U32 => ffi::MLX_UINT32,
            Dtype::U64 => ffi::MLX_UINT64,
            Dtype::I8 => ffi::MLX_INT8,
            Dtype::I16 => ffi::MLX_INT16,
            Dtype::I32 => ffi::MLX_INT32,
            Dtype::I64 => ffi::MLX_INT64,
            Dtype::F16 => ffi::MLX_FLOAT16,
            Dtype::F32 => ffi::MLX_FLOAT32,
            Dtype::F64 => ffi::MLX_FLOAT64,
            Dtype::Bf16 => ffi::MLX_BFLOAT16,
            Dtype::C64 => ffi::MLX_COMPLEX64,
        }
    }

    /// mlx-c's `mlx_dtype` has exactly the variants of this enum (the bindings are generated
    /// from the headers this crate is compiled with).
    pub(crate) fn from_raw(raw: ffi::mlx_dtype) -> Result<Dtype> {
        Ok(match raw {
            ffi::MLX_BOOL => Dtype::Bool,
            ffi::MLX_UINT8 => Dtype::U8,
            ffi::MLX_UINT16 => Dtype::U16,
            ffi::MLX_UINT32 => Dtype::U32,
            ffi::MLX_UINT64 => Dtype::U64,
            ffi::MLX_INT8 => Dtype::I8,
            ffi::MLX_INT16 => Dtype::I16,
            ffi::MLX_INT32 => Dtype::I32,
            ffi::MLX_INT64 => Dtype::I64,
            ffi::MLX_FLOAT16 => Dtype::F16,
            ffi::MLX_FLOAT32 => Dtype::F32,
            ffi::MLX_FLOAT64 => Dtype::F64,
            ffi::MLX_BFLOAT16 => Dtype::Bf16,
            ffi::MLX_COMPLEX64 => Dtype::C64,
            other => return Err(Error::UnsupportedDtype(other)),
        })
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dtype::Bool => "bool",
            Dtype::U8 => "uint8",
            Dtype::U16 => "uint16",
            Dtype::U32 => "uint32",
            Dtype::U64 => "uint64",
            Dtype::I8 => "int8",
            Dtype::I16 => "int16",
            Dtype::I32 => "int32",
            Dtype::I64 => "int64",
            Dtype::F16 => "float16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
            Dtype::Bf16 => "bfloat16",
            Dtype::C64 => "complex64",
        })
    }
}

impl std::str::FromStr for Dtype {
    type Err = String;

    /// Parses MLX/NumPy names (`"bfloat16"`, `"float32"`) and safetensors names (`"BF16"`).
    fn from_str(s: &str) -> std::result::Result<Dtype, String> {
        const ALL: [Dtype; 14] = [
            Dtype::Bool,
            Dtype::U8,
            Dtype::U16,
            Dtype::U32,
            Dtype::U64,
            Dtype::I8,
            Dtype::I16,
            Dtype::I32,
            Dtype::I64,
            Dtype::F16,
            Dtype::F32,
            Dtype::F64,
            Dtype::Bf16,
            Dtype::C64,
        ];
        ALL.into_iter()
            .find(|d| d.to_string() == s || d.safetensors_name() == s)
            .ok_or_else(|| format!("unknown dtype `{s}`"))
    }
}
