//! Block-compressed (BCn) texels as Pillow's `BcnDecode.c` decodes them, for DDS (and the BC3
//! alpha of BLP's DXT5, which `BlpImagePlugin` computes the same way): integer
//! interpolation (BC1 thirds and halves, BC3/BC4/BC5 sevenths and fifths, BC7 64ths with
//! `+ 32 >> 6`), BC6H through half floats clamped to `[0, 1]` and truncated; transparent BC1
//! pixels are black. Output is RGB8, blocks row by row, clipped at the image's edges.

/// A block-compressed pixel format (`BcnDecode.c`'s `N` and its signed variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bcn {
    Bc1,
    Bc2,
    Bc3,
    Bc4,
    Bc5 { signed: bool },
    Bc6 { signed: bool },
    Bc7,
}

impl Bcn {
    pub(super) fn block_bytes(self) -> usize {
        match self {
            Bcn::Bc1 | Bcn::Bc4 => 8,
            _ => 16,
        }
    }
}

/// Decodes `ceil(w / 4) * ceil(h / 4)` blocks in row order into `rgb`, dropping the pixels past
/// the image's right and bottom edges; `None` when `data` holds fewer blocks.
pub(super) fn blocks(data: &[u8], bcn: Bcn, w: usize, h: usize, rgb: &mut [u8]) -> Option<()> {
    let (across, down) = (w.div_ceil(4), h.div_ceil(4));
    let size = bcn.block_bytes();
    let data = across.checked_mul(down).and_then(|n| n.checked_mul(size)).and_then(|n| data.get(..n))?;
    for (index, block) in data.chunks_exact(size).enumerate() {
        let (bx, by) = (index % across * 4, index / across * 4);
        let texels = decode_block(bcn, block);
        for (j, row) in texels.chunks_exact(4).enumerate() {
            let y = by + j;
            if y >= h {
                break;
            }
            for (i, texel) in row.iter().enumerate() {
                let x = bx + i;
                if x < w {
                    let at = (y * w + x) * 3;
                    rgb[at..at + 3].copy_from_slice(texel);
                }
            }
        }
    }
    Some(())
}

/// The RGB of a block's 16 texels, row-major.
fn decode_block(bcn: Bcn, block: &[u8]) -> [[u8; 3]; 16] {
    let mut out = [[0u8; 3]; 16];
    match bcn {
        Bcn::Bc1 => bc1_colors(block, false, &mut out),
        Bcn::Bc2 | Bcn::Bc3 => bc1_colors(&block[8..], true, &mut out),
        Bcn::Bc4 => {
            let l = bc3_alpha(block, false);
            for (o, v) in out.iter_mut().zip(l) {
                *o = [v; 3];
            }
        }
        Bcn::Bc5 { signed } => {
            let (r, g) = (bc3_alpha(block, signed), bc3_alpha(&block[8..], signed));
            let blue = if signed { 128 } else { 0 };
            for ((o, r), g) in out.iter_mut().zip(r).zip(g) {
                *o = [r, g, blue];
            }
        }
        Bcn::Bc6 { signed } => bc6(block, signed, &mut out),
        Bcn::Bc7 => bc7(block, &mut out),
    }
    out
}

/// `decode_565`: each channel widened by repeating its top bits.
fn rgb565(v: u16) -> [u16; 3] {
    let r = (v & 0xf800) >> 8;
    let g = (v & 0x07e0) >> 3;
    let b = (v & 0x001f) << 3;
    [r | r >> 5, g | g >> 6, b | b >> 5]
}

/// BC1 colours: two 565 endpoints and 2-bit indices; `(2a + b) / 3` and `(a + 2b) / 3` when
/// the first endpoint is greater (always for BC2/BC3), else `(a + b) / 2` and transparent black.
fn bc1_colors(block: &[u8], always_four: bool, out: &mut [[u8; 3]; 16]) {
    let c0 = u16::from_le_bytes([block[0], block[1]]);
    let c1 = u16::from_le_bytes([block[2], block[3]]);
    let (a, b) = (rgb565(c0), rgb565(c1));
    let mix = |f: fn(u16, u16) -> u16| [f(a[0], b[0]) as u8, f(a[1], b[1]) as u8, f(a[2], b[2]) as u8];
    let palette = if c0 > c1 || always_four {
        [mix(|a, _| a), mix(|_, b| b), mix(|a, b| (2 * a + b) / 3), mix(|a, b| (a + 2 * b) / 3)]
    } else {
        [mix(|a, _| a), mix(|_, b| b), mix(|a, b| (a + b) / 2), [0; 3]]
    };
    for (n, o) in out.iter_mut().enumerate() {
        let bits = block[4 + n / 4] >> (2 * (n % 4)) & 3;
        *o = palette[usize::from(bits)];
    }
}

/// BC3 alpha / BC4 / BC5 channel: two 8-bit endpoints (signed ones offset by 128) and 3-bit
/// indices; sevenths when the first is greater, else fifths, 0 and 255.
pub(super) fn bc3_alpha(block: &[u8], signed: bool) -> [u8; 16] {
    let endpoint = |b: u8| if signed { u16::from((b as i8 as i16 + 128) as u8) } else { u16::from(b) };
    let (a0, a1) = (endpoint(block[0]), endpoint(block[1]));
    let a = if a0 > a1 {
        [
            a0,
            a1,
            (6 * a0 + a1) / 7,
            (5 * a0 + 2 * a1) / 7,
            (4 * a0 + 3 * a1) / 7,
            (3 * a0 + 4 * a1) / 7,
            (2 * a0 + 5 * a1) / 7,
            (a0 + 6 * a1) / 7,
        ]
    } else {
        [a0, a1, (4 * a0 + a1) / 5, (3 * a0 + 2 * a1) / 5, (2 * a0 + 3 * a1) / 5, (a0 + 4 * a1) / 5, 0, 255]
    };
    let bits = u64::from_le_bytes([block[2], block[3], block[4], block[5], block[6], block[7], 0, 0]);
    std::array::from_fn(|n| a[(bits >> (3 * n) & 7) as usize] as u8)
}

/// The block's bits from `bit`, least significant first, at most 8 (`get_bits`).
fn bits(block: &[u8], bit: usize, count: usize) -> u8 {
    if count == 0 {
        return 0;
    }
    let at = bit / 8;
    let pair = u16::from(block.get(at).copied().unwrap_or(0)) | u16::from(block.get(at + 1).copied().unwrap_or(0)) << 8;
    ((pair >> (bit % 8)) & ((1 << count) - 1)) as u8
}

const WEIGHTS_2: [u32; 4] = [0, 21, 43, 64];
const WEIGHTS_3: [u32; 8] = [0, 9, 18, 27, 37, 46, 55, 64];
const WEIGHTS_4: [u32; 16] = [0, 4, 9, 13, 17, 21, 26, 30, 34, 38, 43, 47, 51, 55, 60, 64];

fn weights(index_bits: usize) -> &'static [u32] {
    match index_bits {
        2 => &WEIGHTS_2,
        3 => &WEIGHTS_3,
        _ => &WEIGHTS_4,
    }
}

/// The subset of texel `n` in a partition of `subsets` subsets.
fn subset(subsets: usize, partition: usize, n: usize) -> usize {
    match subsets {
        2 => usize::from(PARTITIONS_2[partition] >> n & 1),
        3 => (PARTITIONS_3[partition] >> (2 * n) & 3) as usize,
        _ => 0,
    }
}

/// Whether texel `n` is an anchor (its index has one bit less).
fn is_anchor(subsets: usize, partition: usize, n: usize) -> bool {
    n == 0
        || match subsets {
            2 => n == usize::from(ANCHOR_2_OF_2[partition]),
            3 => n == usize::from(ANCHOR_2_OF_3[partition]) || n == usize::from(ANCHOR_3_OF_3[partition]),
            _ => false,
        }
}

/// A BC7 mode: subsets, partition bits, rotation bits, index-selection bits, colour bits,
/// alpha bits, per-endpoint p-bit, shared p-bit, index bits, second index bits.
struct Bc7Mode {
    subsets: usize,
    partition_bits: usize,
    rotation_bits: usize,
    selection_bits: usize,
    color_bits: usize,
    alpha_bits: usize,
    endpoint_pbit: bool,
    shared_pbit: bool,
    index_bits: usize,
    index2_bits: usize,
}

const fn bc7_mode(m: [usize; 10]) -> Bc7Mode {
    Bc7Mode {
        subsets: m[0],
        partition_bits: m[1],
        rotation_bits: m[2],
        selection_bits: m[3],
        color_bits: m[4],
        alpha_bits: m[5],
        endpoint_pbit: m[6] == 1,
        shared_pbit: m[7] == 1,
        index_bits: m[8],
        index2_bits: m[9],
    }
}

/// The eight BC7 modes of the BPTC specification.
const BC7_MODES: [Bc7Mode; 8] = [
    bc7_mode([3, 4, 0, 0, 4, 0, 1, 0, 3, 0]),
    bc7_mode([2, 6, 0, 0, 6, 0, 0, 1, 3, 0]),
    bc7_mode([3, 6, 0, 0, 5, 0, 0, 0, 2, 0]),
    bc7_mode([2, 6, 0, 0, 7, 0, 1, 0, 2, 0]),
    bc7_mode([1, 0, 2, 1, 5, 6, 0, 0, 2, 3]),
    bc7_mode([1, 0, 2, 0, 7, 8, 0, 0, 2, 2]),
    bc7_mode([1, 0, 0, 0, 7, 7, 1, 0, 4, 0]),
    bc7_mode([2, 6, 0, 0, 5, 5, 1, 0, 2, 0]),
];

/// `expand_quantized`: `bits` bits widened to 8 by repeating the top bits (in 8-bit arithmetic).
fn expand(v: u8, bits: usize) -> u8 {
    let v = v.wrapping_shl(8 - bits as u32);
    v | v.checked_shr(bits as u32).unwrap_or(0)
}

/// `bc7_lerp`'s colour part: `((64 - s) * e0 + s * e1 + 32) >> 6`.
fn lerp7(e0: u8, e1: u8, s: u32) -> u8 {
    (((64 - s) * u32::from(e0) + s * u32::from(e1) + 32) >> 6) as u8
}

/// BC7 as `decode_bc7_block` decodes it (mode 8, no bit set, is opaque black).
fn bc7(block: &[u8], out: &mut [[u8; 3]; 16]) {
    let Some(mode) = (0..8).find(|&m| block[0] >> m & 1 == 1) else {
        return;
    };
    let info = &BC7_MODES[mode];
    let mut bit = mode + 1;
    let mut load = |count: usize| {
        let v = bits(block, bit, count);
        bit += count;
        v
    };
    let partition = usize::from(load(info.partition_bits));
    let rotation = load(info.rotation_bits);
    let selection = load(info.selection_bits);
    let count = info.subsets * 2;
    let mut endpoints = [[0u8; 4]; 6];
    for channel in 0..3 {
        for e in endpoints.iter_mut().take(count) {
            e[channel] = load(info.color_bits);
        }
    }
    for e in endpoints.iter_mut().take(count) {
        e[3] = if info.alpha_bits > 0 { load(info.alpha_bits) } else { 255 };
    }
    let (mut color_bits, mut alpha_bits) = (info.color_bits, info.alpha_bits);
    let with_pbit = |e: &mut [u8; 4], p: u8, alpha: bool| {
        for c in e.iter_mut().take(if alpha { 4 } else { 3 }) {
            *c = (*c << 1) | p;
        }
    };
    if info.endpoint_pbit {
        color_bits += 1;
        if alpha_bits > 0 {
            alpha_bits += 1;
        }
        for e in endpoints.iter_mut().take(count) {
            let p = load(1);
            with_pbit(e, p, alpha_bits > 0);
        }
    }
    if info.shared_pbit {
        color_bits += 1;
        if alpha_bits > 0 {
            alpha_bits += 1;
        }
        for pair in endpoints[..count].chunks_exact_mut(2) {
            let p = load(1);
            for e in pair {
                with_pbit(e, p, alpha_bits > 0);
            }
        }
    }
    for e in endpoints.iter_mut().take(count) {
        for c in e.iter_mut().take(3) {
            *c = expand(*c, color_bits);
        }
        if alpha_bits > 0 {
            e[3] = expand(e[3], alpha_bits);
        }
    }
    let color_weights = weights(info.index_bits);
    let alpha_weights =
        weights(if info.alpha_bits > 0 && info.index2_bits > 0 { info.index2_bits } else { info.index_bits });
    let mut color_bit = bit;
    let mut alpha_bit = color_bit + 16 * info.index_bits - info.subsets;
    for (n, o) in out.iter_mut().enumerate() {
        let s = subset(info.subsets, partition, n) * 2;
        let ib = info.index_bits - usize::from(is_anchor(info.subsets, partition, n));
        let i0 = usize::from(bits(block, color_bit, ib));
        color_bit += ib;
        let (color_weight, alpha_weight) = if info.alpha_bits > 0 && info.index2_bits > 0 {
            let ib2 = info.index2_bits - usize::from(n == 0);
            let i1 = usize::from(bits(block, alpha_bit, ib2));
            alpha_bit += ib2;
            if selection != 0 { (alpha_weights[i1], color_weights[i0]) } else { (color_weights[i0], alpha_weights[i1]) }
        } else {
            (color_weights[i0], color_weights[i0])
        };
        let (e0, e1) = (endpoints[s], endpoints[s + 1]);
        let mut texel = [
            lerp7(e0[0], e1[0], color_weight),
            lerp7(e0[1], e1[1], color_weight),
            lerp7(e0[2], e1[2], color_weight),
            lerp7(e0[3], e1[3], alpha_weight),
        ];
        match rotation {
            1 => texel.swap(0, 3),
            2 => texel.swap(1, 3),
            3 => texel.swap(2, 3),
            _ => {}
        }
        *o = [texel[0], texel[1], texel[2]];
    }
}

/// A BC6H mode: subsets, whether endpoints 1.. are deltas, partition bits, endpoint bits, and
/// the red, green and blue delta bits.
struct Bc6Mode {
    subsets: usize,
    deltas: bool,
    partition_bits: usize,
    endpoint_bits: u32,
    delta_bits: [u32; 3],
}

const fn bc6_mode(
    subsets: usize,
    deltas: bool,
    partition_bits: usize,
    endpoint_bits: u32,
    delta_bits: [u32; 3],
) -> Bc6Mode {
    Bc6Mode { subsets, deltas, partition_bits, endpoint_bits, delta_bits }
}

/// The fourteen BC6H modes of the BPTC specification, in `BcnDecode.c`'s numbering.
const BC6_MODES: [Bc6Mode; 14] = [
    bc6_mode(2, true, 5, 10, [5, 5, 5]),
    bc6_mode(2, true, 5, 7, [6, 6, 6]),
    bc6_mode(2, true, 5, 11, [5, 4, 4]),
    bc6_mode(2, true, 5, 11, [4, 5, 4]),
    bc6_mode(2, true, 5, 11, [4, 4, 5]),
    bc6_mode(2, true, 5, 9, [5, 5, 5]),
    bc6_mode(2, true, 5, 8, [6, 5, 5]),
    bc6_mode(2, true, 5, 8, [5, 6, 5]),
    bc6_mode(2, true, 5, 8, [5, 5, 6]),
    bc6_mode(2, false, 5, 6, [6, 6, 6]),
    bc6_mode(1, false, 0, 10, [10, 10, 10]),
    bc6_mode(1, true, 0, 11, [9, 9, 9]),
    bc6_mode(1, true, 0, 12, [8, 8, 8]),
    bc6_mode(1, true, 0, 16, [4, 4, 4]),
];

/// `bc6_sign_extend`: the low `bits` bits as a signed number, kept in 16 bits.
fn sign_extend(v: u16, bits: u32) -> u16 {
    let x = i32::from(v);
    let x = if bits > 0 && x & (1 << (bits - 1)) != 0 { x | -(1i32 << bits) } else { x };
    x as u16
}

/// `bc6_unquantize`: an endpoint of `bits` bits to the 16-bit (or signed 15-bit) range.
fn unquantize(v: u16, bits: u32, signed: bool) -> i32 {
    if !signed {
        let x = i32::from(v);
        if bits >= 15 || x == 0 {
            return x;
        }
        if x == (1 << bits) - 1 {
            return 0xffff;
        }
        return ((x << 15) + 0x4000) >> (bits - 1);
    }
    let mut x = i32::from(v as i16);
    if bits >= 16 {
        return x;
    }
    let negative = x < 0;
    if negative {
        x = -x;
    }
    if x != 0 {
        x = if x >= (1 << (bits - 1)) - 1 { 0x7fff } else { ((x << 15) + 0x4000) >> (bits - 1) };
    }
    if negative { -x } else { x }
}

/// `half_to_float`: the bits of a half-precision float as an `f32` (scaling by 2^112, infinities
/// and NaNs from the top exponent).
fn half_to_float(h: u16) -> f32 {
    let scaled = f32::from_bits(u32::from(h & 0x7fff) << 13) * f32::from_bits(0x7780_0000);
    let mut bits = scaled.to_bits();
    if scaled >= f32::from_bits(0x4780_0000) {
        bits |= 255 << 23;
    }
    f32::from_bits(bits | u32::from(h & 0x8000) << 16)
}

/// `bc6_finalize` then `bc6_clamp`: the interpolated value scaled by 31/64 (31/32 signed) into
/// a half float, clamped to `[0, 1]` and truncated to 0..255.
fn bc6_channel(v: i32, signed: bool) -> u8 {
    let half = if !signed {
        (v * 31 / 64) as u16
    } else if v < 0 {
        0x8000 | ((-v) * 31 / 32) as u16
    } else {
        (v * 31 / 32) as u16
    };
    let value = half_to_float(half);
    if value < 0.0 {
        0
    } else if value > 1.0 {
        255
    } else {
        (value * 255.0) as u8
    }
}

/// BC6H as `decode_bc6_block` decodes it (an invalid mode is black).
fn bc6(block: &[u8], signed: bool, out: &mut [[u8; 3]; 16]) {
    let low = block[0] & 0x1f;
    let (mode, mut bit, layout_bits, index_bits) = match low & 3 {
        0 | 1 => (usize::from(low & 3), 2, 75, 3),
        2 => (2 + usize::from(low >> 2), 5, 72, 3),
        _ => (10 + usize::from(low >> 2), 5, 60, 4),
    };
    let (Some(info), Some(layout)) = (BC6_MODES.get(mode), BC6_BIT_LAYOUT.get(mode)) else {
        return;
    };
    let mut endpoints = [0u16; 12];
    for (i, &packed) in layout.iter().take(layout_bits).enumerate() {
        let (which, shift) = (usize::from(packed >> 4), packed & 15);
        endpoints[which] |= u16::from(bits(block, bit + i, 1)) << shift;
    }
    bit += layout_bits;
    let partition = usize::from(bits(block, bit, info.partition_bits));
    bit += info.partition_bits;
    let count = if info.subsets == 2 { 12 } else { 6 };
    let mask = ((1u32 << info.endpoint_bits) - 1) as u16;
    if signed {
        for e in endpoints.iter_mut().take(3) {
            *e = sign_extend(*e, info.endpoint_bits);
        }
    }
    if signed || info.deltas {
        for i in (3..count).step_by(3) {
            for c in 0..3 {
                endpoints[i + c] = sign_extend(endpoints[i + c], info.delta_bits[c]);
            }
        }
    }
    if info.deltas {
        for i in (3..count).step_by(3) {
            for c in 0..3 {
                endpoints[i + c] = ((u32::from(endpoints[i + c]) + u32::from(endpoints[c])) as u16) & mask;
            }
        }
    }
    let mut unquantized = [0i32; 12];
    for (u, &e) in unquantized.iter_mut().zip(&endpoints).take(count) {
        *u = unquantize(e, info.endpoint_bits, signed);
    }
    let index_weights = weights(index_bits);
    for (n, o) in out.iter_mut().enumerate() {
        let s = subset(info.subsets, partition, n) * 6;
        let anchor = n == 0 || (info.subsets == 2 && n == usize::from(ANCHOR_2_OF_2[partition]));
        let ib = index_bits - usize::from(anchor);
        let weight = index_weights[usize::from(bits(block, bit, ib))] as i32;
        bit += ib;
        let t = 64 - weight;
        for (c, channel) in o.iter_mut().enumerate() {
            let v = (unquantized[s + c] * t + unquantized[s + 3 + c] * weight) >> 6;
            *channel = bc6_channel(v, signed);
        }
    }
}

/// BPTC Table.P2: the subset (bit `i`) of each pixel for each two-subset partition.
const PARTITIONS_2: [u16; 64] = [
    0xcccc, 0x8888, 0xeeee, 0xecc8, 0xc880, 0xfeec, 0xfec8, 0xec80, 0xc800, 0xffec, 0xfe80, 0xe800, 0xffe8, 0xff00,
    0xfff0, 0xf000, 0xf710, 0x008e, 0x7100, 0x08ce, 0x008c, 0x7310, 0x3100, 0x8cce, 0x088c, 0x3110, 0x6666, 0x366c,
    0x17e8, 0x0ff0, 0x718e, 0x399c, 0xaaaa, 0xf0f0, 0x5a5a, 0x33cc, 0x3c3c, 0x55aa, 0x9696, 0xa55a, 0x73ce, 0x13c8,
    0x324c, 0x3bdc, 0x6996, 0xc33c, 0x9966, 0x0660, 0x0272, 0x04e4, 0x4e40, 0x2720, 0xc936, 0x936c, 0x39c6, 0x639c,
    0x9336, 0x9cc6, 0x817e, 0xe718, 0xccf0, 0x0fcc, 0x7744, 0xee22,
];

/// BPTC Table.P3: the subset (bits `2i..2i+2`) of each pixel for each three-subset partition.
const PARTITIONS_3: [u32; 64] = [
    0xaa685050, 0x6a5a5040, 0x5a5a4200, 0x5450a0a8, 0xa5a50000, 0xa0a05050, 0x5555a0a0, 0x5a5a5050, 0xaa550000,
    0xaa555500, 0xaaaa5500, 0x90909090, 0x94949494, 0xa4a4a4a4, 0xa9a59450, 0x2a0a4250, 0xa5945040, 0x0a425054,
    0xa5a5a500, 0x55a0a0a0, 0xa8a85454, 0x6a6a4040, 0xa4a45000, 0x1a1a0500, 0x0050a4a4, 0xaaa59090, 0x14696914,
    0x69691400, 0xa08585a0, 0xaa821414, 0x50a4a450, 0x6a5a0200, 0xa9a58000, 0x5090a0a8, 0xa8a09050, 0x24242424,
    0x00aa5500, 0x24924924, 0x24499224, 0x50a50a50, 0x500aa550, 0xaaaa4444, 0x66660000, 0xa5a0a5a0, 0x50a050a0,
    0x69286928, 0x44aaaa44, 0x66666600, 0xaa444444, 0x54a854a8, 0x95809580, 0x96969600, 0xa85454a8, 0x80959580,
    0xaa141414, 0x96960000, 0xaaaa1414, 0xa05050a0, 0xa0a5a5a0, 0x96000000, 0x40804080, 0xa9a8a9a8, 0xaaaaaa44,
    0x2a4a5254,
];

/// BPTC Table.A2: the second subset's anchor pixel, two subsets.
const ANCHOR_2_OF_2: [u8; 64] = [
    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 2, 8, 2, 2, 8, 8, 15, 2, 8, 2, 2, 8, 8, 2, 2,
    15, 15, 6, 8, 2, 8, 15, 15, 2, 8, 2, 2, 2, 15, 15, 6, 6, 2, 6, 8, 15, 15, 2, 2, 15, 15, 15, 15, 15, 2, 2, 15,
];

/// BPTC Table.A3a: the second subset's anchor pixel, three subsets.
const ANCHOR_2_OF_3: [u8; 64] = [
    3, 3, 15, 15, 8, 3, 15, 15, 8, 8, 6, 6, 6, 5, 3, 3, 3, 3, 8, 15, 3, 3, 6, 10, 5, 8, 8, 6, 8, 5, 15, 15, 8, 15, 3,
    5, 6, 10, 8, 15, 15, 3, 15, 5, 15, 15, 15, 15, 3, 15, 5, 5, 5, 8, 5, 10, 5, 10, 8, 13, 15, 12, 3, 3,
];

/// BPTC Table.A3b: the third subset's anchor pixel, three subsets.
const ANCHOR_3_OF_3: [u8; 64] = [
    15, 8, 8, 3, 15, 15, 3, 8, 15, 15, 15, 15, 15, 15, 15, 8, 15, 8, 15, 3, 15, 8, 15, 8, 3, 15, 6, 10, 15, 15, 10, 8,
    15, 3, 15, 10, 10, 8, 9, 10, 6, 15, 8, 15, 3, 6, 6, 8, 15, 3, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 3, 15, 15, 8,
];

/// BPTC Table.F: for each BC6H mode, where each endpoint bit of the block goes, as
/// `endpoint << 4 | bit` (endpoints `r0 g0 b0 r1 g1 b1 ...`), in block bit order.
const BC6_BIT_LAYOUT: [[u8; 75]; 14] = [
    [
        116, 132, 180, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 32, 33, 34, 35, 36, 37,
        38, 39, 40, 41, 48, 49, 50, 51, 52, 164, 112, 113, 114, 115, 64, 65, 66, 67, 68, 176, 160, 161, 162, 163, 80,
        81, 82, 83, 84, 177, 128, 129, 130, 131, 96, 97, 98, 99, 100, 178, 144, 145, 146, 147, 148, 179,
    ],
    [
        117, 164, 165, 0, 1, 2, 3, 4, 5, 6, 176, 177, 132, 16, 17, 18, 19, 20, 21, 22, 133, 178, 116, 32, 33, 34, 35,
        36, 37, 38, 179, 181, 180, 48, 49, 50, 51, 52, 53, 112, 113, 114, 115, 64, 65, 66, 67, 68, 69, 160, 161, 162,
        163, 80, 81, 82, 83, 84, 85, 128, 129, 130, 131, 96, 97, 98, 99, 100, 101, 144, 145, 146, 147, 148, 149,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
        48, 49, 50, 51, 52, 10, 112, 113, 114, 115, 64, 65, 66, 67, 26, 176, 160, 161, 162, 163, 80, 81, 82, 83, 42,
        177, 128, 129, 130, 131, 96, 97, 98, 99, 100, 178, 144, 145, 146, 147, 148, 179, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
        48, 49, 50, 51, 10, 164, 112, 113, 114, 115, 64, 65, 66, 67, 68, 26, 160, 161, 162, 163, 80, 81, 82, 83, 42,
        177, 128, 129, 130, 131, 96, 97, 98, 99, 176, 178, 144, 145, 146, 147, 116, 179, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
        48, 49, 50, 51, 10, 132, 112, 113, 114, 115, 64, 65, 66, 67, 26, 176, 160, 161, 162, 163, 80, 81, 82, 83, 84,
        42, 128, 129, 130, 131, 96, 97, 98, 99, 177, 178, 144, 145, 146, 147, 180, 179, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 132, 16, 17, 18, 19, 20, 21, 22, 23, 24, 116, 32, 33, 34, 35, 36, 37, 38, 39, 40,
        180, 48, 49, 50, 51, 52, 164, 112, 113, 114, 115, 64, 65, 66, 67, 68, 176, 160, 161, 162, 163, 80, 81, 82, 83,
        84, 177, 128, 129, 130, 131, 96, 97, 98, 99, 100, 178, 144, 145, 146, 147, 148, 179, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 164, 132, 16, 17, 18, 19, 20, 21, 22, 23, 178, 116, 32, 33, 34, 35, 36, 37, 38, 39,
        179, 180, 48, 49, 50, 51, 52, 53, 112, 113, 114, 115, 64, 65, 66, 67, 68, 176, 160, 161, 162, 163, 80, 81, 82,
        83, 84, 177, 128, 129, 130, 131, 96, 97, 98, 99, 100, 101, 144, 145, 146, 147, 148, 149, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 176, 132, 16, 17, 18, 19, 20, 21, 22, 23, 117, 116, 32, 33, 34, 35, 36, 37, 38, 39,
        165, 180, 48, 49, 50, 51, 52, 164, 112, 113, 114, 115, 64, 65, 66, 67, 68, 69, 160, 161, 162, 163, 80, 81, 82,
        83, 84, 177, 128, 129, 130, 131, 96, 97, 98, 99, 100, 178, 144, 145, 146, 147, 148, 179, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 177, 132, 16, 17, 18, 19, 20, 21, 22, 23, 133, 116, 32, 33, 34, 35, 36, 37, 38, 39,
        181, 180, 48, 49, 50, 51, 52, 164, 112, 113, 114, 115, 64, 65, 66, 67, 68, 176, 160, 161, 162, 163, 80, 81, 82,
        83, 84, 85, 128, 129, 130, 131, 96, 97, 98, 99, 100, 178, 144, 145, 146, 147, 148, 179, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 164, 176, 177, 132, 16, 17, 18, 19, 20, 21, 117, 133, 178, 116, 32, 33, 34, 35, 36, 37, 165,
        179, 181, 180, 48, 49, 50, 51, 52, 53, 112, 113, 114, 115, 64, 65, 66, 67, 68, 69, 160, 161, 162, 163, 80, 81,
        82, 83, 84, 85, 128, 129, 130, 131, 96, 97, 98, 99, 100, 101, 144, 145, 146, 147, 148, 149, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
        48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 80, 81, 82, 83, 84, 85, 86, 87,
        88, 89, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
        48, 49, 50, 51, 52, 53, 54, 55, 56, 10, 64, 65, 66, 67, 68, 69, 70, 71, 72, 26, 80, 81, 82, 83, 84, 85, 86, 87,
        88, 42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
        48, 49, 50, 51, 52, 53, 54, 55, 11, 10, 64, 65, 66, 67, 68, 69, 70, 71, 27, 26, 80, 81, 82, 83, 84, 85, 86, 87,
        43, 42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ],
    [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
        48, 49, 50, 51, 15, 14, 13, 12, 11, 10, 64, 65, 66, 67, 31, 30, 29, 28, 27, 26, 80, 81, 82, 83, 47, 46, 45, 44,
        43, 42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ],
];
