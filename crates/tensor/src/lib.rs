//! A safe array over MLX: the only crate above `mlx-ffi` that touches raw handles.
//!
//! - [`Array`] owns an MLX array handle: `Clone` is a reference-count copy, `Drop` frees.
//!   Arrays are lazy; [`Array::eval`] (or any host readback) evaluates them.
//! - Every operation returns [`Result`]: MLX's failures (shape mismatches, bad dtypes, failed
//!   loads) arrive as [`Error::Mlx`] carrying MLX's message, the op and the caller's location.
//!   mlx-c's default handler, which prints and exits the process, is never active: ours is
//!   installed once per process before the first MLX call (see `status.rs`).
//! - Python's scalar rules hold: a Rust number combined with an array takes the array's dtype
//!   ("weak" scalars, [`Operand`]), so `x.mul(0.5)` on a bf16 `x` stays bf16.
//!
//! # Thread model
//! MLX gives every thread its own default stream (since MLX 0.31), and mlx-c's error handler
//! is process-wide; ours records each message in a thread-local slot read back by the same
//! call, so an error never crosses threads.
//! - [`Array`] is neither `Send` nor `Sync`: it stays on the thread that made it. Clones of an
//!   unevaluated array (and arrays built on it) share graph nodes, and MLX evaluates a node
//!   without locks, writing its status, event, inputs and primitive; even an evaluated node is
//!   written once more, by the first `eval` or `is_evaluated` that marks it available. So no
//!   handle to a node that may still be written leaves its thread, and the compiler refuses
//!   the racy patterns (moving a clone to another thread, sharing `&Array`: see [`Array`]).
//! - [`SharedArray`] is what crosses threads: an array evaluated and *settled* at construction
//!   (available, no event, no primitive or inputs left, its buffer where the host reads it),
//!   which MLX from then on only reads. Any number of threads may read it, evaluate it and build
//!   graphs on it at once; it is `Send + Sync`. Model weights are held in this form, which makes
//!   a loaded model shareable (`Arc<Model>`); a result that must change threads is settled with
//!   [`SharedArray::new`] first (or copied to the host).
//! - [`Compiled`] is `Send + Sync` and lives for the process: MLX traces it per thread.
//! - [`Stream`] is neither `Send` nor `Sync`: a stream belongs to the thread that made it.
//!
//! # Example
//!
//! ```
//! use gemma_vision_tensor::{Array, Dtype};
//!
//! let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = a.matmul(&a)?.add(1.0)?; // a weak scalar: the result stays float32
//! assert_eq!((b.shape(), b.dtype()), (vec![2, 2], Dtype::F32));
//! assert_eq!(b.to_vec::<f32>()?, [8.0, 11.0, 16.0, 23.0]);
//! # Ok::<(), gemma_vision_tensor::Error>(())
//! ```
#![allow(unsafe_code, reason = "this crate is the safe wrapper over mlx-ffi")]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod array;
mod compile;
mod device;
mod dtype;
mod element;
mod error;
pub mod fast;
mod fingerprint;
mod host_buffer;
pub mod info;
pub mod memory;
mod ops;
mod safetensors_file;
mod safetensors_save;
mod scalar;
mod sharded;
mod shared;
mod status;
#[cfg(feature = "testing")]
pub mod testing;
mod vector;

pub use array::Array;
pub use compile::{Compiled, TracedFn};
pub use device::{Device, Stream, with_device};
pub use dtype::Dtype;
pub use element::Element;
pub use error::{Error, Result};
pub use fingerprint::fingerprint;
pub use host_buffer::HostBuffer;
pub use safetensors_file::{
    SafetensorsFile, SafetensorsHeader, TensorInfo, load_safetensors, load_safetensors_copying,
    parse_safetensors_header, read_safetensors_header,
};
pub use safetensors_save::{TensorBytes, save_safetensors, write_atomically, write_safetensors};
pub use scalar::Operand;
pub use sharded::ShardedSafetensors;
pub use shared::SharedArray;
