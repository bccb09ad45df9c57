//! Quantized matrix products and the quantization that packs their weights.
//!
//! `mode` is MLX's own name of the scheme: `"affine"` (scales and biases per group, any float
//! dtype), `"mxfp4"`, `"nvfp4"`, `"mxfp8"` (uint8 scales per group, no biases). `group_size`
//! and `bits` left `None` take MLX's defaults for the mode (affine 64/4, mxfp4 32/4, nvfp4
//! 16/4, mxfp8 32/8). MLX validates every combination and reports its own message.

use crate::array::ABSENT;
use crate::status::{api, check};
use crate::vector::VectorArray;
use crate::{Array, Error, Result};
use std::ffi::CString;

fn optional_int(value: Option<i32>) -> mlx_ffi::mlx_optional_int {
    mlx_ffi::mlx_optional_int { value: value.unwrap_or(0), has_value: value.is_some() }
}

fn mode_string(op: &'static str, mode: &str) -> Result<CString> {
    CString::new(mode).map_err(|_| Error::Shape { op, detail: "the quantization mode contains a NUL byte".into() })
}

impl Array {
    /// `self @ dequantize(w).T` (with `transpose`) or `self @ dequantize(w)`, computed from the
    /// packed form as MLX's `quantized_matmul` primitive computes it (`mx.quantized_matmul`,
    /// what `mlx.nn.QuantizedLinear` calls). `w` is uint32 packed `[out, in · bits / 32]`;
    /// `scales` (and, for affine, `biases`) are `[out, in / group_size]`.
    ///
    /// The output dtype is, for affine, the promotion of `self`'s and the scales' dtypes (MLX
    /// casts all three first); for the floating-point modes, `self`'s dtype.
    #[track_caller]
    #[allow(clippy::too_many_arguments, reason = "mirrors mlx_quantized_matmul argument for argument")]
    pub fn quantized_matmul(
        &self,
        w: &Array,
        scales: &Array,
        biases: Option<&Array>,
        transpose: bool,
        group_size: Option<i32>,
        bits: Option<i32>,
        mode: &str,
    ) -> Result<Array> {
        let mode = mode_string("quantized_matmul", mode)?;
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`, `w` and `scales`;
        // `biases` live or the null handle mlx-c documents as "no biases"; the `CString` `mode`;
        // this thread's `stream`.
        Array::from_op("quantized_matmul", |out| unsafe {
            api().mlx_quantized_matmul(
                out,
                self.as_raw(),
                w.as_raw(),
                scales.as_raw(),
                Array::raw_or_absent(biases),
                transpose,
                optional_int(group_size),
                optional_int(bits),
                mode.as_ptr(),
                stream,
            )
        })
    }

    /// Quantizes `self` (`[…, out, in]`, float) along its last axis as `mx.quantize` does:
    /// `(packed weight, scales, biases)`, `biases` present for affine only.
    #[track_caller]
    pub fn quantize(
        &self,
        group_size: Option<i32>,
        bits: Option<i32>,
        mode: &str,
    ) -> Result<(Array, Array, Option<Array>)> {
        let mode = mode_string("quantize", mode)?;
        let mut parts = VectorArray::empty()?;
        let stream = crate::device::current_stream()?;
        // SAFETY: as the op-call contract of `Array::from_op`, with `parts` (a live vector handle,
        // exclusively borrowed) as the output the call fills: the live `self`; the `CString`
        // `mode`; the null handle mlx-c documents as "no global scale"; this thread's `stream`.
        check("quantize", || unsafe {
            api().mlx_quantize(
                parts.as_mut_raw(),
                self.as_raw(),
                optional_int(group_size),
                optional_int(bits),
                mode.as_ptr(),
                ABSENT,
                stream,
            )
        })?;
        let mut parts = parts.to_arrays()?.into_iter();
        match (parts.next(), parts.next(), parts.next()) {
            (Some(w), Some(scales), biases) => Ok((w, scales, biases)),
            _ => Err(Error::Shape { op: "quantize", detail: "MLX returned fewer than two arrays".into() }),
        }
    }

    /// The float matrix a packed weight stands for (`mx.dequantize`), in the scales' dtype for
    /// affine and bfloat16 for the floating-point modes.
    #[track_caller]
    pub fn dequantize(
        &self,
        scales: &Array,
        biases: Option<&Array>,
        group_size: Option<i32>,
        bits: Option<i32>,
        mode: &str,
    ) -> Result<Array> {
        let mode = mode_string("dequantize", mode)?;
        let stream = crate::device::current_stream()?;
        let no_dtype = mlx_ffi::mlx_optional_dtype { value: mlx_ffi::MLX_FLOAT32, has_value: false };
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and `scales`; `biases`
        // live or null ("no biases"), and null for "no global scale", as mlx-c documents; the
        // `CString` `mode`; this thread's `stream`.
        Array::from_op("dequantize", |out| unsafe {
            api().mlx_dequantize(
                out,
                self.as_raw(),
                scales.as_raw(),
                Array::raw_or_absent(biases),
                optional_int(group_size),
                optional_int(bits),
                mode.as_ptr(),
                ABSENT,
                no_dtype,
                stream,
            )
        })
    }
}
