//! mlx-vlm's `apply_multidimensional_rope` (gemma4 vision), op by op in the input dtype.
