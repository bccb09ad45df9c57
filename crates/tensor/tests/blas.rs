//! MLX's float32 matmuls run in the BLAS libmlx was built with: nothing is linked ahead of it.

extern crate gemma_vision_tensor as tensor;

#[test]
#[cfg(target_os = "linux")]
fn float32_matmul_uses_the_blas_libmlx_ships_with() {
    let provider = tensor::info::blas_provider().expect("cblas_sgemm is resolvable");
    let name = provider.file_name().unwrap().to_string_lossy().into_owned();
    // The PyPI wheel bundles the reference BLAS as mlx_cpu.libs/libblas-<hash>.so.3.10.0.
    assert!(
        !name.starts_with("libblis") && !name.starts_with("libopenblas"),
        "cblas_sgemm comes from {}",
        provider.display()
    );
    let a = tensor::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(a.matmul(&a).unwrap().to_vec::<f32>().unwrap(), [7.0, 10.0, 15.0, 22.0]);
}
