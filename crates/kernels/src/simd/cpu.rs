//! What the CPU can do, decided once per process: the [`Isa`] every kernel runs.
//!
//! [`isa`] reads the CPU (CPUID, through `is_x86_feature_detected!`; on aarch64
//! `is_aarch64_feature_detected!`) and the environment once, in a `OnceLock`, and every kernel
//! takes its value at its top-level entry and passes it down; nothing below re-checks. The
//! environment overrides the CPU, for tests and comparisons: `KERNELS_PORTABLE` (set to
//! anything) forces the portable loops, `KERNELS_AVX2` keeps the AVX2 + FMA kernels without
//! the AVX-512 ones.
//!
//! An [`Isa`] variant other than [`Isa::Portable`] carries a zero-sized proof token (`Avx2`,
//! `Avx512` on x86-64; `Neon` on aarch64) that only this module constructs, and only after the
//! check: holding one proves the CPU runs that code. A kernel's `#[target_feature]` function is
//! reached through a safe entry that takes the token (declared with `target_entry!`); that entry
//! holds the one `unsafe` call, so the code around the kernels is free of `unsafe` for the
//! instruction set, and what `unsafe` remains is memory: the micro-kernels' pointer arguments,
//! the vector loads and stores.
//!
//! How the names relate: [`Isa`] is what the CPU (and the environment) allow, for every
//! kernel of this crate. [`MicroKernel`](crate::gemm::MicroKernel) is the matrix products'
//! choice of register tile, which a caller (a test, a benchmark) may name;
//! [`MicroKernel::detect`](crate::gemm::MicroKernel::detect) is
//! [`MicroKernel::of`](crate::gemm::MicroKernel::of) [`isa`], and a named micro-kernel runs, with the vector helpers around its tiles, at its own
//! instruction set capped at [`isa`]'s. Above this crate, `vision::Kernels` (for the encoder)
//! and `layers::Execution` (per block) choose whether MLX or these kernels compute, and
//! `layers::HostKernel` names which of these kernels ran for an op; none of them chooses the
//! instruction set, which is this module's alone.
//!
//! Each instruction set is one variant with its own token, resolved in [`isa`] under its
//! `cfg`, and one more arm where a kernel has code for it; kernels without that code keep the
//! portable loops. The x86 variants exist only on `x86_64`, `Isa::Neon` only on `aarch64`
//! (where NEON is part of the baseline target, so [`isa`] finds it on every CPU unless the
//! environment asks for the portable loops).

use std::fmt;
use std::sync::OnceLock;

/// The instruction set the kernels run, as [`isa`] resolves it for this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512F (with AVX2 and FMA): the matrix products' paired tiles, the bf16 tiles, the
    /// softmax lanes and `exp` in 16-lane registers; the AVX2 kernels everywhere else.
    #[cfg(target_arch = "x86_64")]
    Avx512(Avx512),
    /// AVX2 and FMA: 8 float32 lanes.
    #[cfg(target_arch = "x86_64")]
    Avx2(Avx2),
    /// NEON (Advanced SIMD): 4 float32 lanes per register, 32 registers, `fmla` fused.
    #[cfg(target_arch = "aarch64")]
    Neon(Neon),
    /// Plain Rust loops (auto-vectorised at the baseline target).
    Portable,
}

/// The instruction set for this process: the best the CPU has among [`Isa`]'s, unless the
/// environment says less (`KERNELS_PORTABLE`: portable; `KERNELS_AVX2`: no AVX-512). Read
/// once; later calls return the same value.
#[inline]
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(resolve)
}

/// The one place that reads the CPU's features.
fn resolve() -> Isa {
    if std::env::var_os("KERNELS_PORTABLE").is_some() {
        return Isa::Portable;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        let avx2 = Avx2(());
        if std::env::var_os("KERNELS_AVX2").is_none() && std::arch::is_x86_feature_detected!("avx512f") {
            return Isa::Avx512(Avx512(avx2));
        }
        return Isa::Avx2(avx2);
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("neon") {
        return Isa::Neon(Neon(()));
    }
    Isa::Portable
}

impl fmt::Display for Isa {
    /// The instruction set's name as `doctor` and benchmarks print it: `AVX-512F`, `AVX2+FMA`,
    /// `NEON` or `portable`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(_) => "AVX-512F",
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(_) => "AVX2+FMA",
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(_) => "NEON",
            Isa::Portable => "portable",
        })
    }
}

impl Isa {
    /// The AVX2 + FMA token, where this instruction set includes them.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn avx2(self) -> Option<Avx2> {
        match self {
            Isa::Avx512(avx512) => Some(avx512.avx2()),
            Isa::Avx2(avx2) => Some(avx2),
            Isa::Portable => None,
        }
    }

    /// The AVX-512F token, where this instruction set includes it.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn avx512(self) -> Option<Avx512> {
        match self {
            Isa::Avx512(avx512) => Some(avx512),
            Isa::Avx2(_) | Isa::Portable => None,
        }
    }

    /// The NEON token, where this instruction set is NEON.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    pub fn neon(self) -> Option<Neon> {
        match self {
            Isa::Neon(neon) => Some(neon),
            Isa::Portable => None,
        }
    }

    /// This instruction set without AVX-512 (the AVX2 kernels where it had AVX-512).
    #[inline]
    pub fn at_most_avx2(self) -> Isa {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(avx512) => Isa::Avx2(avx512.avx2()),
            other => other,
        }
    }
}

/// Proof that the CPU runs AVX2 and FMA code (and that the environment allows it): only
/// [`isa`] makes one, after checking.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avx2(());

/// Proof that the CPU runs AVX-512F code as well as AVX2 and FMA code (and that the
/// environment allows both): only [`isa`] makes one, after checking.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avx512(Avx2);

#[cfg(target_arch = "x86_64")]
impl Avx512 {
    /// The AVX2 + FMA proof that this one includes.
    #[inline(always)]
    pub fn avx2(self) -> Avx2 {
        self.0
    }
}

/// Proof that the CPU runs NEON code (and that the environment allows it): only [`isa`] makes
/// one, after checking.
#[cfg(target_arch = "aarch64")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neon(());

/// Declares a safe entry to a `#[target_feature]` function: `fn name[generics](args) = target;`
/// after the token type (`Avx2` or `Avx512`; `Neon` on aarch64) becomes
/// `fn name<generics>(token, args)`, which calls `target::<generics>(args)`; with a body in
/// place of `= target;` (as [`simd::stamp!`](crate::simd) writes its entries), it runs the body.
///
/// The call goes through a trampoline compiled with exactly the token's features, whose body
/// (the call of `target`, or the body given) is safe code: it compiles only if `target` is a
/// safe function (no `unsafe fn` with preconditions of its own) whose features the token's
/// include. The one `unsafe` is the
/// call into the trampoline, whose only precondition, those features, the token discharges
/// (only [`isa`] makes one, after checking the CPU). NEON is in aarch64's baseline target, but
/// a function calling its intrinsics still declares the feature, so it is reached the same way.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! target_entry {
    (Avx2; $($entry:tt)*) => {
        $crate::cpu::target_entry!(@entry Avx2, "avx2,fma"; $($entry)*);
    };
    (Avx512; $($entry:tt)*) => {
        $crate::cpu::target_entry!(@entry Avx512, "avx512f,avx2,fma"; $($entry)*);
    };
    (Neon; $($entry:tt)*) => {
        $crate::cpu::target_entry!(@entry Neon, "neon"; $($entry)*);
    };
    (
        @entry $token:ident, $features:literal;
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $([$($g:ident: $bound:path),+ $(,)?])? ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        = $target:ident;
    ) => {
        $crate::cpu::target_entry! {
            @entry $token, $features;
            $(#[$attr])*
            $vis fn $name $([$($g: $bound),+])? ($($arg: $ty),*) $(-> $ret)? {
                $target $(::<$($g),+>)? ($($arg),*)
            }
        }
    };
    (
        @entry $token:ident, $features:literal;
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $([$($g:ident: $bound:path),+ $(,)?])? ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        $body:block
    ) => {
        $(#[$attr])*
        #[inline(always)]
        $vis fn $name $(<$($g: $bound),+>)? (_: $crate::cpu::$token, $($arg: $ty),*) $(-> $ret)? {
            #[target_feature(enable = $features)]
            #[inline]
            fn trampoline $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? $body
            // SAFETY: the trampoline is safe but for its `#[target_feature]`s, which are the
            // token's: only `cpu::isa` makes one, after checking that the CPU has them.
            unsafe { trampoline $(::<$($g),+>)? ($($arg),*) }
        }
    };
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) use target_entry;

#[cfg(test)]
mod tests {
    use super::*;

    /// The overrides lower what the CPU allows (run the tests with `KERNELS_PORTABLE=1` or
    /// `KERNELS_AVX2=1` to see each), and every view of the resolution agrees with it.
    #[test]
    fn the_instruction_set_is_resolved_once_and_honours_the_environment() {
        let isa = isa();
        assert_eq!(resolve(), isa, "the environment and the CPU do not change");
        if std::env::var_os("KERNELS_PORTABLE").is_some() {
            assert_eq!(isa, Isa::Portable);
        }
        #[cfg(target_arch = "x86_64")]
        {
            if std::env::var_os("KERNELS_AVX2").is_some() {
                assert_eq!(isa.avx512(), None);
            }
            let cpu_avx2 = std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
            if std::env::var_os("KERNELS_PORTABLE").is_none() {
                assert_eq!(isa.avx2().is_some(), cpu_avx2);
            }
            assert_eq!(isa.at_most_avx2().avx512(), None);
            assert_eq!(isa.at_most_avx2().avx2(), isa.avx2());
        }
        #[cfg(target_arch = "aarch64")]
        {
            // NEON is in the baseline target: only the environment turns it off.
            assert_eq!(isa.neon().is_some(), std::env::var_os("KERNELS_PORTABLE").is_none());
            assert_eq!(isa.at_most_avx2(), isa);
        }
        assert!(["AVX-512F", "AVX2+FMA", "NEON", "portable"].contains(&isa.to_string().as_str()), "{isa}");
    }
}
