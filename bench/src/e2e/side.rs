//! The sides of the e2e table: one implementation in one dtype each, what each can run and
//! which mlx-vlm side it is timed against.

use super::Model;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// One implementation in one dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// Ours in the checkpoint's dtype (bf16): bit-exact with mlx-vlm bf16.
    OursNative,
    /// Ours with `--dtype f32`.
    OursF32,
    /// candle-transformers' gemma4 tower, float32 (gemma4 checkpoints only).
    Candle,
    /// llama.cpp's mtmd encoder on an f32 GGUF mmproj.
    LlamaF32,
    /// llama.cpp's mtmd encoder on an f16 GGUF mmproj.
    LlamaF16,
    /// llama.cpp's mtmd encoder on a Q8_0 GGUF mmproj (what its converter's `--outtype q8_0`
    /// writes).
    LlamaQ8,
    /// llama.cpp's mtmd encoder on a bf16 GGUF mmproj (what its converter's `--outtype bf16`
    /// writes: the checkpoint's bf16 matrices as they are).
    LlamaBf16,
    /// mlx-vlm, stock wheels, weights cast to float32.
    MlxF32,
    /// mlx-vlm, stock wheels, the checkpoint's bf16.
    MlxBf16,
}

/// Every side, in the order each row runs them: sides compared with one another run back to
/// back (the float32 ones, then the bf16 ones), as this machine's speed drifts over minutes.
pub const SIDES: [Side; 9] = [
    Side::OursF32,
    Side::Candle,
    Side::LlamaF32,
    Side::LlamaF16,
    Side::LlamaQ8,
    Side::MlxF32,
    Side::LlamaBf16,
    Side::OursNative,
    Side::MlxBf16,
];

impl Side {
    pub fn id(self) -> &'static str {
        match self {
            Side::OursNative => "ours-native",
            Side::OursF32 => "ours-f32",
            Side::Candle => "candle",
            Side::LlamaF32 => "llama-f32",
            Side::LlamaF16 => "llama-f16",
            Side::LlamaQ8 => "llama-q8",
            Side::LlamaBf16 => "llama-bf16",
            Side::MlxF32 => "mlx-f32",
            Side::MlxBf16 => "mlx-bf16",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Side::OursNative => "ours, native (bf16)",
            Side::OursF32 => "ours, f32",
            Side::Candle => "candle, f32",
            Side::LlamaF32 => "llama.cpp, f32",
            Side::LlamaF16 => "llama.cpp, f16",
            Side::LlamaQ8 => "llama.cpp, Q8_0",
            Side::LlamaBf16 => "llama.cpp, bf16",
            Side::MlxF32 => "mlx-vlm, f32",
            Side::MlxBf16 => "mlx-vlm, bf16",
        }
    }

    /// The mlx-vlm side doing the same work in the same dtype (the time ratio's denominator).
    pub fn reference(self) -> Option<Side> {
        match self {
            Side::OursNative | Side::LlamaBf16 => Some(Side::MlxBf16),
            Side::OursF32 | Side::Candle | Side::LlamaF32 | Side::LlamaF16 | Side::LlamaQ8 => Some(Side::MlxF32),
            Side::MlxBf16 | Side::MlxF32 => None,
        }
    }

    pub fn is_mlx_vlm(self) -> bool {
        matches!(self, Side::MlxBf16 | Side::MlxF32)
    }

    /// The GGUF mmproj type of a llama.cpp side (`mmproj_gguf.py --dtype`).
    pub fn gguf_type(self) -> Option<&'static str> {
        match self {
            Side::LlamaF32 => Some("f32"),
            Side::LlamaF16 => Some("f16"),
            Side::LlamaQ8 => Some("q8_0"),
            Side::LlamaBf16 => Some("bf16"),
            _ => None,
        }
    }

    /// Whether the side can encode `model`: candle has the gemma4 tower only; a quantized
    /// checkpoint runs on ours and mlx-vlm in its own dtype only (candle's tower and the GGUF
    /// writer read dense weights, and the targets compare the checkpoint's dtype).
    pub fn supports(self, model: &Model) -> bool {
        if model.quantization.is_some() {
            return matches!(self, Side::OursNative | Side::MlxBf16);
        }
        !(model.unified && self == Side::Candle)
    }

    /// Whether the side takes part in throughput cases (several images per call): ours and candle.
    pub fn batches(self) -> bool {
        matches!(self, Side::OursNative | Side::OursF32 | Side::Candle)
    }
}
