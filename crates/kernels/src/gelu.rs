//! `mlx.nn.gelu_approx` (the tanh GELU) times the up projection, op by op in the input dtype.
