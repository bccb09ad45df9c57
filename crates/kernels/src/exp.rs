//! MLX 0.32's CPU `exp` (`mlx/backend/cpu/simd/math.h`): the Cephes polynomial with `fma`.
