//! Matrix products with MLX 0.32 CPU bits: `matmul` and `addmm` for float32 (the reference BLAS's sequential k-sum) and bf16 (`simd_gemm`).
