//! Element-wise binary ops (`add`, `multiply`) with MLX 0.32 CPU bits.
