//! The vocabulary's conversions and transpose on every instruction set this CPU runs, against
//! the scalar conversions: one body, stamped per instruction set.

use crate::bf16_from_f32;
use half::bf16;

/// What one instruction set's lanes make of `values` (a multiple of its lanes): the bf16
/// store, `round::<bf16>`, `round_bf16_not_nan`, and the float32 store of the reloaded bf16.
type Conversions = (Vec<u16>, Vec<f32>, Vec<f32>, Vec<f32>);

crate::simd::stamp! {
    lanes v for Avx2, Avx512, Neon;

    /// The conversions of every run of lanes of `values`.
    entry fn conversions(values: &[f32]) -> Conversions {
        let mut out: Conversions = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for chunk in values.chunks_exact(v::LANES) {
            let x = v::load_at(chunk, 0);
            let mut stored = [bf16::ZERO; v::LANES];
            v::store_at(&mut stored, 0, x);
            let mut back = [0f32; v::LANES];
            v::store_at(&mut back, 0, v::load_at(&stored, 0));
            out.0.extend(stored.map(bf16::to_bits));
            out.1.extend(v::to_array(v::round::<bf16>(x)));
            out.2.extend(v::to_array(v::round_bf16_not_nan(x)));
            out.3.extend(back);
        }
        out
    }

    /// The transpose of the `LANES × LANES` matrix `m` (row-major), row-major.
    entry fn transposed(m: &[f32]) -> Vec<f32> {
        let rows = std::array::from_fn(|i| v::load_at(m, i * v::LANES));
        v::transpose(rows).into_iter().flat_map(|row| v::to_array(row)).collect()
    }
}

/// The instruction sets this CPU runs, as (name, conversions, transpose, lanes).
type Paths = Vec<(&'static str, Box<dyn Fn(&[f32]) -> Conversions>, Box<dyn Fn(&[f32]) -> Vec<f32>>, usize)>;

fn paths() -> Paths {
    let mut paths: Paths = Vec::new();
    let isa = crate::cpu::isa();
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = isa.avx2() {
        paths.push(("avx2", Box::new(move |x| avx2::conversions(t, x)), Box::new(move |m| avx2::transposed(t, m)), 8));
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = isa.avx512() {
        let (conversions, transposed) =
            (move |x: &[f32]| avx512::conversions(t, x), move |m: &[f32]| avx512::transposed(t, m));
        paths.push(("avx512", Box::new(conversions), Box::new(transposed), 16));
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(t) = isa.neon() {
        paths.push(("neon", Box::new(move |x| neon::conversions(t, x)), Box::new(move |m| neon::transposed(t, m)), 4));
    }
    let _ = isa;
    paths
}

#[test]
fn loads_stores_and_rounding_match_the_scalar_conversions() {
    let mut values: Vec<f32> = (0..4096).map(|i| f32::from_bits((i as u32).wrapping_mul(0x9E37_79B9))).collect();
    values.extend([f32::NAN, -f32::NAN, f32::from_bits(0x7F80_0001), f32::INFINITY, -0.0, 1.0 + 2f32.powi(-8)]);
    values.extend([f32::from_bits(1), f32::from_bits(0x807F_FFFF), f32::MAX, f32::from_bits(0x7FC0_0000)]);
    values.resize(values.len().next_multiple_of(16), 3.0);
    for (name, conversions, _, _) in paths() {
        let (stored, rounded, integer, back) = conversions(&values);
        for (i, &x) in values.iter().enumerate() {
            let want = bf16_from_f32(x);
            assert_eq!(stored[i], want.to_bits(), "{name} store of {:#x}", x.to_bits());
            assert_eq!(rounded[i].to_bits(), want.to_f32().to_bits(), "{name} round of {:#x}", x.to_bits());
            assert_eq!(back[i].to_bits(), want.to_f32().to_bits(), "{name} reload of {:#x}", x.to_bits());
            if !x.is_nan() {
                let rule = crate::gemm::arithmetic::round_bf16(x);
                assert_eq!(integer[i].to_bits(), rule.to_bits(), "{name} integer rule on {:#x}", x.to_bits());
            }
        }
    }
}

#[test]
fn transpose_moves_lane_j_of_row_i_to_lane_i_of_row_j() {
    for (name, _, transposed, lanes) in paths() {
        let m: Vec<f32> = (0..lanes * lanes).map(|i| i as f32).collect();
        let t = transposed(&m);
        for j in 0..lanes {
            for i in 0..lanes {
                assert_eq!(t[j * lanes + i], (i * lanes + j) as f32, "{name}: ({j}, {i})");
            }
        }
    }
}
