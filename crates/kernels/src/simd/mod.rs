//! The instruction sets: which one runs ([`cpu`]), and the one vocabulary of float32 lanes that
//! each of them speaks, over which the kernels write their vector code once.
//!
//! # The lanes vocabulary
//!
//! `simd::avx2` (8 lanes, AVX2 + FMA), `simd::avx512` (16 lanes, AVX-512F) and `simd::neon`
//! (4 lanes, aarch64) define the same names with the same signatures, every function a
//! `#[target_feature]` function of its instruction set (so a body written over them compiles to
//! that instruction set's code: nothing generic is left to inline across a feature boundary).
//! `interface!` below lists every signature once and checks each module against it.
//!
//! | name | what |
//! |---|---|
//! | `V`, `M`, `LANES` | the float32 lanes, a mask of lanes, how many lanes |
//! | `splat`, `from_array`, `to_array` | lanes from one value or an array, lanes as an array |
//! | `add`, `sub`, `mul`, `div`, `sqrt`, `neg`, `abs`, `floor` | per lane, IEEE float32 |
//! | `mul_add(a, b, c)` | `a · b + c` rounded once |
//! | `gt`, `lt`, `ge`, `le`, `eq`, `is_nan` | masks (ordered: false where a NaN is compared) |
//! | `or`, `and`, `and_not`, `all`, `mask_lanes` | masks combined, all set, as booleans |
//! | `select(m, a, b)`, `clear(m, v)` | `a` where `m`, else `b`; `v` with the lanes `m` sets made `+0` |
//! | `maximum`, `minimum`, `clip` | MLX's selections (a NaN in `x` kept; see `elementwise`) |
//! | `bits_and`, `bits_zero`, `min_bits`, `add_bits` | on the lanes' bits as unsigned integers |
//! | `two_to(n)` | `2ⁿ` for integral `n`, built in the exponent field as MLX's `exp` builds it |
//! | `round_bf16`, `round_bf16_not_nan`, `round::<T>` | rounded to bf16 (or `T`) as MLX rounds, widened back |
//! | `load_f32`, `load_bf16`, `store_f32`, `store_bf16_exact` (raw) | `LANES` values of one dtype |
//! | `load`, `store`, `store_exact` (raw) | `LANES` values of any [`Float`](crate::Float) widened, narrowed as MLX narrows, narrowed bit for bit |
//! | `load_at`, `store_at`, `store_exact_at` | the same on `x[c..c + LANES]` (safe: bounds checked) |
//! | `transpose` | `LANES × LANES`: lane `j` of row `i` becomes lane `i` of row `j` |
//! | `row_sums` | one row per lane: `Σ term(row[c])` in column order, as MLX's sequential reductions |
//!
//! The first half is written per instruction set (its intrinsics); `round`, the loads and
//! stores of any `Float`, the selections, `row_sums` are written once (`derived!`) over it.
//!
//! # Stamping
//!
//! [`stamp!`] instantiates items written once over the vocabulary for each instruction set it
//! names, as a module named after that instruction set in the kernel's module
//! (`rms_norm::avx2`, `rms_norm::neon`): an `entry fn` becomes a safe function that takes the
//! instruction set's proof token ([`cpu`]); any other `fn` a helper with the instruction set's
//! `#[target_feature]`; `only <Isa> { … }` holds items of one instruction set alone, written
//! with its intrinsics where the code differs on purpose (a `use` of them included), in the same
//! module and stamped the same way. Code that stays per instruction
//! set without a shared body is written the same way, as `mod avx2` / `mod neon` in the file of
//! its concern (the micro-kernels, which are large: one file per instruction set under
//! `gemm/microkernel/`).

pub mod cpu;

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;

/// Pointers to rows `first..first + N` of `x` (rows of `dim`), the last row repeated past the
/// end (those lanes are computed and ignored): the rows of one vector of
/// [`row_sums`](avx2::row_sums). `first` is a row of `x`.
#[inline]
pub(crate) fn row_pointers<T, const N: usize>(x: &[T], dim: usize, first: usize) -> [*const T; N] {
    let rows = x.len() / dim.max(1);
    std::array::from_fn(|i| x[(first + i).min(rows.saturating_sub(1)) * dim..].as_ptr())
}

/// Instantiates items written once over the lanes vocabulary for each instruction set named:
///
/// ```text
/// simd::stamp! {
///     lanes v (power = crate::power) for Avx2, Neon;
///
///     /// An entry: `avx2::rows(token, x, dim)`, safe.
///     entry fn rows[T: Float](x: &mut [T], dim: usize) { … v::add(a, b) … power::square_as_pow(f) … }
///
///     /// A helper, `#[inline]`, with the instruction set's `#[target_feature]`.
///     fn scale_row[T: Float](x: &mut [T], r: f32) { … }
///
///     only Avx2 { use std::arch::x86_64::*; /* items of AVX2 alone, stamped as above */ }
/// }
/// ```
///
/// For each instruction set, a module named after it (`avx2`, `avx512` under
/// `target_arch = "x86_64"`; `neon` under aarch64) holds every item, with the kernel's own items
/// in scope (`use super::*`), `v` naming that instruction set's vocabulary and each alias in
/// the parentheses naming the same instruction set's module of another kernel (`power` is
/// `crate::power::avx2` in `avx2`). An entry's body runs in a `#[target_feature]` function
/// reached through [`cpu::target_entry!`](cpu), which holds the one `unsafe` call; arguments
/// are plain names (`x: T`), generics are written in brackets.
macro_rules! stamp {
    (lanes $v:ident for $($isa:ident),+ $(,)?; $($items:tt)*) => {
        $crate::simd::stamp!(@isas $v () [$($isa)+] $($items)*);
    };
    (lanes $v:ident ($($deps:tt)*) for $($isa:ident),+ $(,)?; $($items:tt)*) => {
        $crate::simd::stamp!(@isas $v ($($deps)*) [$($isa)+] $($items)*);
    };
    (@isas $v:ident $deps:tt [$isa:ident $($more:ident)*] $($items:tt)*) => {
        $crate::simd::stamp!(@module $isa $v $deps $($items)*);
        $crate::simd::stamp!(@isas $v $deps [$($more)*] $($items)*);
    };
    (@isas $v:ident $deps:tt [] $($items:tt)*) => {};

    (@module Avx2 $($rest:tt)*) => {
        $crate::simd::stamp!(@cfg "x86_64" avx2 Avx2 "avx2,fma"; $($rest)*);
    };
    (@module Avx512 $($rest:tt)*) => {
        $crate::simd::stamp!(@cfg "x86_64" avx512 Avx512 "avx512f,avx2,fma"; $($rest)*);
    };
    (@module Neon $($rest:tt)*) => {
        $crate::simd::stamp!(@cfg "aarch64" neon Neon "neon"; $($rest)*);
    };
    (
        @cfg $arch:literal $module:ident $token:ident $features:literal;
        $v:ident ($($alias:ident = $($path:ident)::+),* $(,)?) $($items:tt)*
    ) => {
        #[cfg(target_arch = $arch)]
        pub(crate) mod $module {
            #[allow(unused_imports, reason = "the kernel's items, for the bodies to name")]
            use super::*;
            use $crate::simd::$module as $v;
            $(use $($path)::+::$module as $alias;)*
            $crate::simd::stamp!(@items $token $features; $($items)*);
        }
    };

    (@items $token:ident $features:literal;) => {};
    (@items Avx2 $features:literal; only Avx2 { $($own:tt)* } $($rest:tt)*) => {
        $crate::simd::stamp!(@items Avx2 $features; $($own)* $($rest)*);
    };
    (@items Avx512 $features:literal; only Avx512 { $($own:tt)* } $($rest:tt)*) => {
        $crate::simd::stamp!(@items Avx512 $features; $($own)* $($rest)*);
    };
    (@items Neon $features:literal; only Neon { $($own:tt)* } $($rest:tt)*) => {
        $crate::simd::stamp!(@items Neon $features; $($own)* $($rest)*);
    };
    (@items $token:ident $features:literal; only $other:ident { $($own:tt)* } $($rest:tt)*) => {
        $crate::simd::stamp!(@items $token $features; $($rest)*);
    };
    (@items $token:ident $features:literal; use $($segment:ident ::)+ *; $($rest:tt)*) => {
        use $($segment ::)+ *;
        $crate::simd::stamp!(@items $token $features; $($rest)*);
    };
    (@items $token:ident $features:literal; use $path:path; $($rest:tt)*) => {
        use $path;
        $crate::simd::stamp!(@items $token $features; $($rest)*);
    };
    (
        @items $token:ident $features:literal;
        $(#[$attr:meta])*
        entry fn $name:ident $([$($g:ident: $bound:path),+ $(,)?])? ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        $body:block
        $($rest:tt)*
    ) => {
        $crate::cpu::target_entry! {
            $token;
            $(#[$attr])*
            pub(super) fn $name $([$($g: $bound),+])? ($($arg: $ty),*) $(-> $ret)? $body
        }
        $crate::simd::stamp!(@items $token $features; $($rest)*);
    };
    (
        @items $token:ident $features:literal;
        $(#[$attr:meta])*
        $vis:vis unsafe fn $name:ident $([$($g:ident: $bound:path),+ $(,)?])? ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        $body:block
        $($rest:tt)*
    ) => {
        $(#[$attr])*
        #[inline]
        #[target_feature(enable = $features)]
        $vis unsafe fn $name $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? $body
        $crate::simd::stamp!(@items $token $features; $($rest)*);
    };
    (
        @items $token:ident $features:literal;
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $([$($g:ident: $bound:path),+ $(,)?])? ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        $body:block
        $($rest:tt)*
    ) => {
        $(#[$attr])*
        #[inline]
        #[target_feature(enable = $features)]
        $vis fn $name $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? $body
        $crate::simd::stamp!(@items $token $features; $($rest)*);
    };
}

pub(crate) use stamp;

/// The half of the vocabulary written once over the other half, expanded in each instruction
/// set's module (`derived!(Avx2 "avx2,fma")`) beside its hand-written half.
macro_rules! derived {
    ($token:ident $features:literal) => {
        $crate::simd::stamp! {
            @items $token $features;

            /// Each lane rounded to `T` (as MLX's `static_cast<T>(float)`) and widened back:
            /// the identity for float32, [`round_bf16`] for bf16.
            pub(crate) fn round[T: $crate::Float](v: V) -> V {
                if $crate::element::is::<T, f32>() {
                    v
                } else if $crate::element::is::<T, half::bf16>() {
                    round_bf16(v)
                } else {
                    from_array(&to_array(v).map(|lane| T::from_f32(lane).to_f32()))
                }
            }

            /// The `LANES` values at `p` widened to float32 (exactly).
            ///
            /// # Safety
            /// `p` is valid for reading `LANES` consecutive `T`.
            pub(crate) unsafe fn load[T: $crate::Float](p: *const T) -> V {
                if $crate::element::is::<T, f32>() {
                    // SAFETY: `T` is `f32`; the caller's guarantee.
                    unsafe { load_f32(p.cast()) }
                } else if $crate::element::is::<T, half::bf16>() {
                    // SAFETY: `T` is `bf16`; the caller's guarantee.
                    unsafe { load_bf16(p.cast()) }
                } else {
                    // SAFETY: `i < LANES`; the caller gives `LANES` readable values.
                    from_array(&std::array::from_fn(|i| unsafe { p.add(i).read() }.to_f32()))
                }
            }

            /// Stores the `LANES` lanes at `p`, each narrowed to `T` as MLX narrows
            /// ([`bf16_from_f32`](crate::bf16_from_f32) for bf16).
            ///
            /// # Safety
            /// `p` is valid for writing `LANES` consecutive `T`.
            pub(crate) unsafe fn store[T: $crate::Float](p: *mut T, v: V) {
                if $crate::element::is::<T, half::bf16>() {
                    // SAFETY: `T` is `bf16`; the caller's guarantee.
                    unsafe { store_bf16_exact(p.cast(), round_bf16(v)) }
                } else if $crate::element::is::<T, f32>() {
                    // SAFETY: `T` is `f32`; the caller's guarantee.
                    unsafe { store_f32(p.cast(), v) }
                } else {
                    for (i, lane) in to_array(v).into_iter().enumerate() {
                        // SAFETY: `i < LANES`; the caller gives `LANES` writable values.
                        unsafe { p.add(i).write(T::from_f32(lane)) };
                    }
                }
            }

            /// Stores lanes that are exact widenings of `T` values (loaded by [`load`], or
            /// selected among such) back to those values, bit for bit: no rounding, NaN payloads
            /// kept (for the [`native`](crate::element::native) types; others go through
            /// [`Float::from_f32`](crate::Float::from_f32)).
            ///
            /// # Safety
            /// `p` is valid for writing `LANES` consecutive `T`.
            pub(crate) unsafe fn store_exact[T: $crate::Float](p: *mut T, v: V) {
                if $crate::element::is::<T, half::bf16>() {
                    // SAFETY: `T` is `bf16`; the caller's guarantee.
                    unsafe { store_bf16_exact(p.cast(), v) }
                } else {
                    // SAFETY: the caller's guarantee; narrowing an exact widening is exact for f32.
                    unsafe { store(p, v) }
                }
            }

            /// [`load`] of `x[c..c + LANES]`: the safe load (it panics unless
            /// `c + LANES <= x.len()`, which the callers' loop bounds ensure).
            pub(crate) fn load_at[T: $crate::Float](x: &[T], c: usize) -> V {
                let x = &x[c..c + LANES];
                // SAFETY: `x` holds `LANES` readable values.
                unsafe { load(x.as_ptr()) }
            }

            /// [`store`] of `v` into `x[c..c + LANES]`: the safe store (it panics unless
            /// `c + LANES <= x.len()`).
            pub(crate) fn store_at[T: $crate::Float](x: &mut [T], c: usize, v: V) {
                let x = &mut x[c..c + LANES];
                // SAFETY: `x` holds `LANES` writable values.
                unsafe { store(x.as_mut_ptr(), v) }
            }

            /// [`store_exact`] of `v` into `x[c..c + LANES]`: the safe store (it panics unless
            /// `c + LANES <= x.len()`).
            pub(crate) fn store_exact_at[T: $crate::Float](x: &mut [T], c: usize, v: V) {
                let x = &mut x[c..c + LANES];
                // SAFETY: `x` holds `LANES` writable values.
                unsafe { store_exact(x.as_mut_ptr(), v) }
            }

            /// MLX's `maximum(x, m)` per lane: `x` where it is NaN or larger, else `m`.
            pub(crate) fn maximum(x: V, m: V) -> V {
                select(or(gt(x, m), is_nan(x)), x, m)
            }

            /// MLX's `minimum(x, m)` per lane: `x` where it is NaN or smaller, else `m`.
            pub(crate) fn minimum(x: V, m: V) -> V {
                select(or(lt(x, m), is_nan(x)), x, m)
            }

            /// MLX's `clip(v, lo, hi)` per lane
            /// ([`clip_scalar`](crate::elementwise::clip_scalar) on float32 values):
            /// `maximum(v, lo)` then `minimum(·, hi)`, a NaN lane kept, a NaN bound taken (with
            /// its bits: a caller storing bf16 leaves NaN bounds to the scalar clip).
            pub(crate) fn clip(v: V, bounds: (f32, f32)) -> V {
                minimum(maximum(v, splat(bounds.0)), splat(bounds.1))
            }

            /// Lane `i` holds `0 + term(rows[i][0]) + term(rows[i][1]) + …` over `dim` columns,
            /// summed in column order in float32, as MLX's sequential reductions sum (one row
            /// per lane, so no row's order changes). `term` maps widened values to terms.
            ///
            /// # Safety
            /// Each `rows[i]` is valid for reading `dim` values.
            pub(crate) unsafe fn row_sums[T: $crate::Float](
                rows: &[*const T; LANES],
                dim: usize,
                term: impl Fn(V) -> V,
            ) -> V {
                let mut sum = splat(0.0);
                let mut column = 0;
                while column + LANES <= dim {
                    // SAFETY: columns `column..column + LANES` of every row are readable.
                    let block = std::array::from_fn(|i| unsafe { load(rows[i].add(column)) });
                    for values in transpose(block) {
                        sum = add(sum, term(values));
                    }
                    column += LANES;
                }
                while column < dim {
                    // SAFETY: `column < dim`: column `column` of every row is readable.
                    let lanes = std::array::from_fn(|i| unsafe { rows[i].add(column).read() }.to_f32());
                    sum = add(sum, term(from_array(&lanes)));
                    column += 1;
                }
                sum
            }
        }
    };
}

pub(crate) use derived;

/// Every name of the lanes vocabulary with its signature, checked against an instruction set's
/// module: a name missing there, or of another signature, fails to compile.
macro_rules! interface {
    ($module:ident) => {
        const _: () = {
            use $module::*;
            let _: usize = LANES;
            let _: unsafe fn(f32) -> V = splat;
            let _: unsafe fn(&[f32; LANES]) -> V = from_array;
            let _: unsafe fn(V) -> [f32; LANES] = to_array;
            let _: [unsafe fn(V, V) -> V; 4] = [add, sub, mul, div];
            let _: [unsafe fn(V) -> V; 4] = [sqrt, neg, abs, floor];
            let _: unsafe fn(V, V, V) -> V = mul_add;
            let _: [unsafe fn(V, V) -> M; 5] = [gt, lt, ge, le, eq];
            let _: unsafe fn(V) -> M = is_nan;
            let _: [unsafe fn(M, M) -> M; 3] = [or, and, and_not];
            let _: unsafe fn(M) -> bool = all;
            let _: unsafe fn(M) -> [bool; LANES] = mask_lanes;
            let _: unsafe fn(M, V, V) -> V = select;
            let _: unsafe fn(M, V) -> V = clear;
            let _: [unsafe fn(V, V) -> V; 3] = [maximum, minimum, min_bits];
            let _: unsafe fn(V, (f32, f32)) -> V = clip;
            let _: unsafe fn(V, u32) -> V = bits_and;
            let _: unsafe fn(V, u32) -> M = bits_zero;
            let _: unsafe fn(V, i32) -> V = add_bits;
            let _: unsafe fn(V) -> V = two_to;
            let _: [unsafe fn(V) -> V; 4] = [round_bf16, round_bf16_not_nan, round::<f32>, round::<half::bf16>];
            let _: unsafe fn(*const f32) -> V = load_f32;
            let _: unsafe fn(*const half::bf16) -> V = load_bf16;
            let _: unsafe fn(*mut f32, V) = store_f32;
            let _: unsafe fn(*mut half::bf16, V) = store_bf16_exact;
            let _: unsafe fn(*const half::bf16) -> V = load::<half::bf16>;
            let _: unsafe fn(*mut half::bf16, V) = store::<half::bf16>;
            let _: unsafe fn(*mut half::bf16, V) = store_exact::<half::bf16>;
            let _: unsafe fn(&[half::bf16], usize) -> V = load_at::<half::bf16>;
            let _: unsafe fn(&mut [half::bf16], usize, V) = store_at::<half::bf16>;
            let _: unsafe fn(&mut [half::bf16], usize, V) = store_exact_at::<half::bf16>;
            let _: unsafe fn([V; LANES]) -> [V; LANES] = transpose;
            let _: unsafe fn(&[*const f32; LANES], usize, fn(V) -> V) -> V = row_sums::<f32>;
        };
    };
}

#[cfg(target_arch = "x86_64")]
interface!(avx2);
#[cfg(target_arch = "x86_64")]
interface!(avx512);
#[cfg(target_arch = "aarch64")]
interface!(neon);

#[cfg(test)]
mod tests;
