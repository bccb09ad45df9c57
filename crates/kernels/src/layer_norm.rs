//! `mx.fast.layer_norm` as MLX 0.32 computes it on the CPU (its fallback op sequence).
