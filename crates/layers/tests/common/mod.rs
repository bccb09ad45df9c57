//! Helpers shared by the kernel-against-MLX tests.
#![allow(dead_code, reason = "each test file uses a subset")]

/// Fails unless MLX's float32 matmul runs in the stock wheel's bundled reference BLAS (the
/// float32 comparisons against MLX need it: another BLAS sums in another order).
pub fn require_reference_blas() {
    let blas = tensor::info::blas_provider().expect("cblas_sgemm is resolvable");
    let name = blas.file_name().unwrap_or_default().to_string_lossy().into_owned();
    assert!(
        name.starts_with("libblas"),
        "MLX's float32 matmul runs on {}, not the wheel's reference BLAS",
        blas.display()
    );
}

/// `w` quantized by MLX's `quantize` as `quantization` says: the packed weight, the scales and
/// (affine modes) the biases.
pub fn quantize_as(
    w: &tensor::Array,
    quantization: kernels::quantized::Quantization,
) -> (tensor::Array, tensor::Array, Option<tensor::Array>) {
    let (group, bits) = (quantization.group_size() as i32, quantization.bits() as i32);
    w.quantize(Some(group), Some(bits), quantization.mode().as_str()).expect("MLX quantizes the weight")
}
