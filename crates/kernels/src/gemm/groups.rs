//! k-sums in groups: the k steps split into groups of `group` steps; each group's sum `P`
//! starts from zero (one tile, [`TileKernel::run_steps`] without accumulating) and joins the
//! tile's accumulator as `C = R(C + R(s · P))`, with one factor `s` per column and group and
//! `R` the arithmetic's rounding (bf16 in bf16; in float32 one step of the target's
//! [`MultiplyAdd`](super::arithmetic::MultiplyAdd) rule, as every step of `P`). This is MLX's fp-quantized
//! product: `fp_qmm_t`'s `gsum` over a group, then `sum += scale * gsum`. `C` starts at `+0`
//! before the first group (so a first `s · P` of `−0` gives `+0`, as MLX's `T sum = 0` does).

use super::arithmetic::{Arithmetic, round_bf16};
use super::microkernel::{Steps, TileKernel};
use super::tile::{LINE, MR, NR, TILE};
use crate::cpu::Isa;

/// `tile` updated by the `kc / group` groups of the packed panels `a` (`kc × MR`) and `b`
/// (`kc × NR`): for each group `g` in order, `P` over its `group` steps (with `steps`), then
/// `tile = R(tile + R(scales[g · NR + j] · P))` column by column. `kc` is a multiple of
/// `group`; `scales` holds `kc / group · NR` factors; `next` is a prefetch hint. In float32
/// this is the kernel's grouped tile function; in bf16, the bf16 tile function per group and
/// the combination here (with `isa`'s vector code where it has some: the same bits).
#[allow(clippy::too_many_arguments, reason = "one tile's update: the kernel, its operands and the groups")]
pub(crate) fn accumulate_groups(
    kernel: TileKernel,
    (steps, arithmetic): (Steps, Arithmetic),
    group: usize,
    kc: usize,
    (a, b): (&[f32], &[f32]),
    scales: &[f32],
    tile: &mut [f32; TILE],
    next: &[f32],
    isa: Isa,
) {
    if arithmetic == Arithmetic::F32 {
        kernel.run_grouped(steps == Steps::Fused, (kc, group), (a, b), scales, tile, next);
        return;
    }
    let groups = kc / group;
    let share = next.len().div_ceil(groups.max(1)).next_multiple_of(LINE);
    let mut partial = [0.0f32; TILE];
    for g in 0..groups {
        let panels = (&a[g * group * MR..], &b[g * group * NR..]);
        let next = next.get(g * share..).map_or(&[][..], |rest| &rest[..share.min(rest.len())]);
        kernel.run_steps(steps, group, panels, &mut partial, false, next);
        combine_bf16(tile, &partial, &scales[g * NR..(g + 1) * NR], isa);
    }
}

/// `tile = bf16(tile + bf16(scales[j] · partial))` for every row, column `j`.
#[inline(always)]
fn combine_bf16(tile: &mut [f32; TILE], partial: &[f32; TILE], scales: &[f32], isa: Isa) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        avx2::combine_bf16(avx2, tile, partial, scales);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        neon::combine_bf16(neon, tile, partial, scales);
        return;
    }
    let _ = isa;
    for (c, p) in tile.chunks_exact_mut(NR).zip(partial.chunks_exact(NR)) {
        for ((c, &p), &s) in c.iter_mut().zip(p).zip(scales) {
            let scaled = round_bf16(s * p);
            *c = round_bf16(*c + scaled);
        }
    }
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// [`combine_bf16`](super::combine_bf16) `LANES` columns at a time.
    entry fn combine_bf16(tile: &mut [f32; TILE], partial: &[f32; TILE], scales: &[f32]) {
        let scales = &scales[..NR];
        for vector in 0..NR / v::LANES {
            let at = vector * v::LANES;
            let s = v::load_at(scales, at);
            for (c, p) in tile.chunks_exact_mut(NR).zip(partial.chunks_exact(NR)) {
                let scaled = v::round_bf16_not_nan(v::mul(s, v::load_at(p, at)));
                v::store_at(c, at, v::round_bf16_not_nan(v::add(v::load_at(c, at), scaled)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::arithmetic::{MultiplyAdd, TargetMultiplyAdd};
    use super::super::microkernel::MicroKernel;
    use super::*;
    use crate::bf16_from_f32;
    use crate::testing::lcg_values;
    use half::bf16;

    #[test]
    fn each_group_is_summed_from_zero_then_scaled_into_the_tile() {
        let (group, groups) = (4usize, 3usize);
        let kc = group * groups;
        let a: Vec<f32> = lcg_values::<bf16>(kc * MR, 1, 8.0).iter().map(|x| x.to_f32()).collect();
        let b: Vec<f32> = lcg_values::<bf16>(kc * NR, 2, 6.0).iter().map(|x| x.to_f32()).collect();
        let mut scales: Vec<f32> = lcg_values::<bf16>(groups * NR, 3, 2.0).iter().map(|x| x.to_f32()).collect();
        scales[5] = -1.0;
        let start: [f32; TILE] = std::array::from_fn(|i| if i == 5 { 0.0 } else { i as f32 - 40.0 });
        for arithmetic in [Arithmetic::F32, Arithmetic::Bf16] {
            let round = |x: f32| if arithmetic == Arithmetic::Bf16 { bf16_from_f32(x).to_f32() } else { x };
            let mut want = start;
            for g in 0..groups {
                for (i, row) in want.chunks_exact_mut(NR).enumerate() {
                    for (j, c) in row.iter_mut().enumerate() {
                        let mut sum = 0.0f32;
                        let step = |x: f32, y: f32, acc: f32| match arithmetic {
                            Arithmetic::F32 => TargetMultiplyAdd::mul_add(x, y, acc),
                            Arithmetic::Bf16 => round(acc + round(x * y)),
                        };
                        for k in g * group..(g + 1) * group {
                            sum = step(a[k * MR + i], b[k * NR + j], sum);
                        }
                        *c = step(scales[g * NR + j], sum, *c);
                    }
                }
            }
            let steps = if arithmetic == Arithmetic::Bf16 { Steps::Bf16 } else { Steps::Mlx };
            for kernel in MicroKernel::available() {
                let mut tile = start;
                let isa = kernel.isa();
                accumulate_groups(
                    kernel.resolve(),
                    (steps, arithmetic),
                    group,
                    kc,
                    (&a, &b),
                    &scales,
                    &mut tile,
                    &[],
                    isa,
                );
                assert_eq!(tile.map(f32::to_bits), want.map(f32::to_bits), "{kernel:?} {arithmetic:?}");
            }
        }
    }
}
