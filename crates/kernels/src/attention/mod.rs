//! Scaled dot-product attention with the bits of MLX 0.32's CPU `fast::scaled_dot_product_attention` (its fallback: matmul, mask add, precise softmax, matmul).
