//! mlx-vlm's gemma4 `VisionRMSNorm` / `VisionRMSNormNoScale` op sequence, in float32.
