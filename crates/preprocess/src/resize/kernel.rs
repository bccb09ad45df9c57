//! The instruction set the passes run on, chosen once per resize.

use super::portable;
use super::taps::PairedTaps;

/// Which implementation of the two passes' inner loops to use. Every kernel computes Pillow's
/// integer arithmetic exactly; they differ only in vector width.
#[derive(Debug, Clone, Copy)]
pub enum Kernel {
    /// 16 lanes with `wide` (SSE2 / NEON): every CPU.
    Portable,
    /// 32 lanes with AVX2, when the CPU has it (checked at run time); `narrow`: with the narrow
    /// weight split where the axis allows it (see [`taps`](super::taps)).
    #[cfg(target_arch = "x86_64")]
    Avx2 { simd: pulp::x86::V3, narrow: bool },
}

impl Kernel {
    /// The widest kernel this CPU runs.
    pub fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            return Kernel::Avx2 { simd, narrow: true };
        }
        Kernel::Portable
    }

    /// Rows [`horizontal_rows`](Self::horizontal_rows) transposes at a time; callers that feed it
    /// row by row do best with multiples of this.
    pub fn tile_rows(self) -> usize {
        match self {
            Kernel::Portable => portable::TILE,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 { .. } => super::avx2::TILE,
        }
    }

    /// Pillow's horizontal 8-bit pass over every row of `src` (`in_w` RGB pixels per row) into
    /// `out` (`taps.outputs()` RGB pixels per row, as many rows). `columns` is scratch space,
    /// reused between calls.
    pub fn horizontal_rows(self, src: &[u8], in_w: usize, taps: &PairedTaps, columns: &mut Vec<u8>, out: &mut [u8]) {
        match self {
            Kernel::Portable => portable::horizontal_rows(src, in_w, taps, columns, out),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 { simd, narrow } => super::avx2::horizontal_rows(simd, narrow, src, in_w, taps, columns, out),
        }
    }

    /// Output row `y` of Pillow's vertical 8-bit pass: tap `t` of `taps` reads the input row
    /// `src[offsets[t]..][..out.len()]`.
    pub fn vertical_row(self, src: &[u8], offsets: &[usize], y: usize, taps: &PairedTaps, out: &mut [u8]) {
        match self {
            Kernel::Portable => portable::vertical_row(src, offsets, y, taps, out),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 { simd, narrow } => super::avx2::vertical_row(simd, narrow, src, offsets, y, taps, out),
        }
    }
}
