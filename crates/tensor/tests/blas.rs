//! Float32 matmuls go through the BLAS linked ahead of libmlx.

#[test]
#[cfg(target_os = "linux")]
fn float32_matmul_uses_the_linked_blas() {
    let info = tensor::info::blas();
    let provider = mlx_ffi::blas::cblas_provider().expect("cblas_sgemm is resolvable");
    let provider_name = provider.file_name().unwrap().to_string_lossy().into_owned();
    if info.name == "BLIS" {
        // Our binary resolves cblas_sgemm to BLIS, not to the reference BLAS the MLX wheel
        // bundles (libblas-*.so in mlx_cpu.libs); libmlx binds the same global definition.
        assert!(provider_name.starts_with("libblis"), "cblas_sgemm comes from {}", provider.display());
        assert!(info.threads >= 1);
        assert!(info.version.is_some());
    } else {
        assert!(!provider_name.is_empty());
    }
    // And a float32 matmul runs and is right.
    let a = tensor::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(a.matmul(&a).unwrap().to_vec::<f32>().unwrap(), [7.0, 10.0, 15.0, 22.0]);
}
