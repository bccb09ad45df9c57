//! How MLX quantizes a matrix for its CPU `quantized_matmul`: the [`QuantizationMode`]s, bits
//! and group sizes it serves ([`Quantization`]), the packed extents, and the weight's codes.
//!
//! The packed weight of an `[N, K]` matrix is uint32 `[N, K · bits / 32]`. `_qmm_t` and
//! `fp_qmm_t` read it as bytes in memory order (`(const uint8_t*)w`), one row of
//! `K · bits / 8` bytes per output column, and each row is a little-endian bitstream: code `i`
//! of a row is its bits `[i · bits, (i + 1) · bits)` ([`code`]). For 1, 2, 4 and 8 bits that is
//! the C++'s byte walk (`wi & bitmask`, then `wi >>= bits`), for 3, 5 and 6 bits its
//! [`extract_bits`] (8 codes per 3 or 5 bytes, 4 codes per 3 bytes).

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// MLX's quantization modes (`mode` of `mx.quantize` / `mx.quantized_matmul`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuantizationMode {
    /// `w = scale · q + bias` per group, `q` an unsigned code of `bits` bits; float scales and
    /// biases.
    Affine,
    /// OCP microscaling FP4: E2M1 weights (`FP4_LUT`), an E8M0 uint8 scale per 32 of them.
    Mxfp4,
    /// NVIDIA FP4: E2M1 weights, an E4M3 uint8 scale per 16 of them.
    Nvfp4,
    /// OCP microscaling FP8: E4M3 weights (`FromFP8`), an E8M0 uint8 scale per 32 of them.
    Mxfp8,
}

impl QuantizationMode {
    /// MLX's name of the mode (`"affine"`, `"mxfp4"`, `"nvfp4"`, `"mxfp8"`).
    pub fn as_str(self) -> &'static str {
        match self {
            QuantizationMode::Affine => "affine",
            QuantizationMode::Mxfp4 => "mxfp4",
            QuantizationMode::Nvfp4 => "nvfp4",
            QuantizationMode::Mxfp8 => "mxfp8",
        }
    }

    /// Whether the mode stores per-group float biases beside float scales (affine); the others
    /// store uint8 scales alone.
    pub fn has_biases(self) -> bool {
        self == QuantizationMode::Affine
    }

    /// The bits and group sizes MLX computes in this mode, in words (for errors).
    pub(crate) fn served(self) -> &'static str {
        match self {
            QuantizationMode::Affine => "group size 32, 64 or 128 and bits 1, 2, 3, 4, 5, 6 or 8",
            QuantizationMode::Mxfp4 => "group size 32 and 4 bits",
            QuantizationMode::Nvfp4 => "group size 16 and 4 bits",
            QuantizationMode::Mxfp8 => "group size 32 and 8 bits",
        }
    }
}

impl fmt::Display for QuantizationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for QuantizationMode {
    /// The refusal, naming the text and the modes there are.
    type Err = String;

    /// The mode MLX names `text`.
    fn from_str(text: &str) -> std::result::Result<QuantizationMode, String> {
        Ok(match text {
            "affine" => QuantizationMode::Affine,
            "mxfp4" => QuantizationMode::Mxfp4,
            "nvfp4" => QuantizationMode::Nvfp4,
            "mxfp8" => QuantizationMode::Mxfp8,
            other => return Err(format!("`{other}` is not a quantization mode (affine, mxfp4, nvfp4, mxfp8)")),
        })
    }
}

/// How a matrix is quantized: a mode with its bits per weight and weights per scale, one MLX
/// 0.32.4 computes (`quantize` accepts and the CPU `quantized_matmul` serves the same set).
/// Affine: bits 1 (MLX 0.32.4; not 0.32.2), 2, 3, 4, 5, 6 or 8, groups of 32, 64 or 128
/// (`_qmm_dispatch_typed`, `_qmm_dispatch_group`); mxfp4: 4 bits, groups of 32; nvfp4: 4 bits,
/// groups of 16; mxfp8: 8 bits, groups of 32 (`fp_qmm_dispatch_typed`). The one quantization
/// type of the workspace: `layers` re-exports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quantization {
    mode: QuantizationMode,
    bits: usize,
    group_size: usize,
}

impl Quantization {
    /// mxfp4: 4-bit E2M1 weights, E8M0 scales per 32.
    pub const MXFP4: Quantization = Quantization { mode: QuantizationMode::Mxfp4, bits: 4, group_size: 32 };
    /// nvfp4: 4-bit E2M1 weights, E4M3 scales per 16.
    pub const NVFP4: Quantization = Quantization { mode: QuantizationMode::Nvfp4, bits: 4, group_size: 16 };
    /// mxfp8: 8-bit E4M3 weights, E8M0 scales per 32.
    pub const MXFP8: Quantization = Quantization { mode: QuantizationMode::Mxfp8, bits: 8, group_size: 32 };

    /// `mode` with `bits` and `group_size`; [`Error::Quantization`] for a combination MLX does
    /// not compute.
    pub fn new(mode: QuantizationMode, bits: usize, group_size: usize) -> Result<Quantization> {
        let served = match mode {
            QuantizationMode::Affine => matches!(bits, 1..=6 | 8) && matches!(group_size, 32 | 64 | 128),
            QuantizationMode::Mxfp4 => (bits, group_size) == (4, 32),
            QuantizationMode::Nvfp4 => (bits, group_size) == (4, 16),
            QuantizationMode::Mxfp8 => (bits, group_size) == (8, 32),
        };
        if !served {
            return Err(Error::Quantization { mode, bits, group_size });
        }
        Ok(Quantization { mode, bits, group_size })
    }

    /// Affine quantization with `bits` and `group_size` (see [`Quantization::new`]).
    pub fn affine(bits: usize, group_size: usize) -> Result<Quantization> {
        Quantization::new(QuantizationMode::Affine, bits, group_size)
    }

    /// MLX's quantization of `mode` when bits and group size are not given
    /// (`_defaults_for_mode`): affine 4 bits in groups of 64; mxfp4, nvfp4 and mxfp8 their one
    /// served combination.
    pub fn default_for(mode: QuantizationMode) -> Quantization {
        match mode {
            QuantizationMode::Affine => Quantization { mode, bits: 4, group_size: 64 },
            QuantizationMode::Mxfp4 => Quantization::MXFP4,
            QuantizationMode::Nvfp4 => Quantization::NVFP4,
            QuantizationMode::Mxfp8 => Quantization::MXFP8,
        }
    }

    /// `mode` with `bits` and `group_size`, each absent one MLX's default for the mode
    /// ([`Quantization::default_for`]), as `mx.quantize(w, group_size, bits, mode)` fills
    /// them; [`Error::Quantization`] as [`Quantization::new`].
    pub fn with_defaults(
        mode: QuantizationMode,
        bits: Option<usize>,
        group_size: Option<usize>,
    ) -> Result<Quantization> {
        let default = Quantization::default_for(mode);
        Quantization::new(mode, bits.unwrap_or(default.bits), group_size.unwrap_or(default.group_size))
    }

    pub fn mode(self) -> QuantizationMode {
        self.mode
    }

    /// Bits per weight (per code).
    pub fn bits(self) -> usize {
        self.bits
    }

    /// Weights per scale (and per bias).
    pub fn group_size(self) -> usize {
        self.group_size
    }

    /// The C++'s `pack_factor` (`get_pack_factor(bits, 8)`): codes per pack of
    /// [`Quantization::bytes_per_pack`] bytes.
    pub(crate) fn pack_factor(self) -> usize {
        match self.bits {
            3 | 5 => 8,
            6 => 4,
            bits => 8 / bits,
        }
    }

    /// The C++'s `bytes_per_pack` (`get_bytes_per_pack(bits)`).
    pub(crate) fn bytes_per_pack(self) -> usize {
        match self.bits {
            3 | 6 => 3,
            5 => 5,
            _ => 1,
        }
    }

    /// The largest code, `2^bits − 1` (the C++'s `bitmask`).
    pub(crate) fn mask(self) -> u32 {
        (1 << self.bits) - 1
    }
}

impl fmt::Display for Quantization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} bits, groups of {}", self.mode, self.bits, self.group_size)
    }
}

/// `extract_bits<T, bits>` for 3, 5 and 6 bits, as written in `backend/cpu/quantized.cpp`: the
/// `pack_factor` codes of the pack at `w_in` (3, 5 or 3 bytes) into `w_out`.
pub(crate) fn extract_bits(bits: usize, w_in: &[u8], w_out: &mut [u32; 8]) {
    let w = |i: usize| u32::from(w_in[i]);
    match bits {
        3 => {
            w_out[0] = w(0) & 0x7;
            w_out[1] = (w(0) & 0x38) >> 3;
            w_out[2] = ((w(0) & 0xc0) >> 6) + ((w(1) & 0x1) << 2);
            w_out[3] = (w(1) & 0xe) >> 1;
            w_out[4] = (w(1) & 0x70) >> 4;
            w_out[5] = ((w(1) & 0x80) >> 7) + ((w(2) & 0x3) << 1);
            w_out[6] = (w(2) & 0x1c) >> 2;
            w_out[7] = (w(2) & 0xe0) >> 5;
        }
        5 => {
            w_out[0] = w(0) & 0x1f;
            w_out[1] = ((w(0) & 0xe0) >> 5) + ((w(1) & 0x3) << 3);
            w_out[2] = (w(1) & 0x7c) >> 2;
            w_out[3] = ((w(1) & 0x80) >> 7) + ((w(2) & 0xf) << 1);
            w_out[4] = ((w(2) & 0xf0) >> 4) + ((w(3) & 0x1) << 4);
            w_out[5] = (w(3) & 0x3e) >> 1;
            w_out[6] = ((w(3) & 0xc0) >> 6) + ((w(4) & 0x7) << 2);
            w_out[7] = (w(4) & 0xf8) >> 3;
        }
        6 => {
            w_out[0] = w(0) & 0x3f;
            w_out[1] = ((w(0) >> 6) & 0x03) + ((w(1) & 0x0f) << 2);
            w_out[2] = ((w(1) >> 4) & 0x0f) + ((w(2) & 0x03) << 4);
            w_out[3] = (w(2) >> 2) & 0x3f;
        }
        _ => {}
    }
}

/// Code `i` of a row of packed bytes: bits `[i · bits, (i + 1) · bits)` of the little-endian
/// bitstream (`bits ≤ 8`, so a code spans at most two bytes).
#[inline(always)]
pub(crate) fn code(row: &[u8], i: usize, bits: usize) -> u32 {
    let (byte, shift) = (i * bits / 8, i * bits % 8);
    let low = u32::from(row[byte]);
    let high = if shift + bits > 8 { u32::from(row[byte + 1]) << 8 } else { 0 };
    ((low | high) >> shift) & ((1 << bits) - 1)
}

/// The packed weight's bytes in memory order, as MLX reads them (`(const uint8_t*)w`).
pub(crate) fn bytes(words: &[u32]) -> &[u8] {
    // SAFETY: the words are initialised memory of `4 · len` bytes, every byte pattern is a `u8`
    // and `u8` has alignment 1; the borrow keeps `words` alive and unchanged.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), size_of_val(words)) }
}
