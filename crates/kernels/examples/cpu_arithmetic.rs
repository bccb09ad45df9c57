//! This crate's kernels on the op list of `crates/parity/python/cpu_arithmetic.py`, for
//! `cargo xtask emulate` to compare with stock MLX on the same platform (x86-64 natively,
//! aarch64 under `qemu-aarch64`).
//!
//! ```text
//! cargo run --release -p gemma-vision-kernels --example cpu_arithmetic -- INPUTS MLX OUT
//! ```
//!
//! `INPUTS` and `MLX` are directories written by `cpu_arithmetic.py export`: one raw
//! little-endian file per array (`NAME.bin`) and `manifest.txt` (`NAME DTYPE DIM…` per line).
//! `INPUTS` holds the float32 inputs; `MLX` the platform's MLX outputs, of which this reads only
//! the quantized weight MLX made there (`qparam_{w,scales,biases}.{float32,bfloat16}`). Each
//! op runs in float32 and in bf16 (the inputs cast to bf16 as MLX's `astype` rounds) and its
//! output is written to `OUT/OP.DTYPE.bin`, widened to float32 (exact for bf16), in MLX's
//! layout. Ops without a kernel here (`softmax` alone, `rope` with MLX's own tables,
//! `conv2d`) are not written.

extern crate gemma_vision_kernels as kernels;

use half::bf16;
use kernels::Float;
use kernels::attention::{AttentionInputs, AttentionShape, attention};
use kernels::gemm::{GemmOptions, MatRef, gemm};
use kernels::quantized::{FloatSlice, Quantization, QuantizedMatrix, Scales, quantized_matmul};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, String>;

/// One array of an exported directory: its dtype name, shape and raw bytes.
struct Stored {
    dtype: String,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

/// The arrays of a directory written by `cpu_arithmetic.py export`.
struct Exported {
    dir: PathBuf,
    arrays: HashMap<String, Stored>,
}

impl Exported {
    fn read(dir: &Path) -> Result<Exported> {
        let manifest = dir.join("manifest.txt");
        let text = std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
        let mut arrays = HashMap::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut fields = line.split_whitespace();
            let (Some(name), Some(dtype)) = (fields.next(), fields.next()) else {
                return Err(format!("{}: bad line {line:?}", manifest.display()));
            };
            let shape =
                fields.map(|d| d.parse::<usize>().map_err(|e| format!("{line:?}: {e}"))).collect::<Result<_>>()?;
            let path = dir.join(format!("{name}.bin"));
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            arrays.insert(name.to_owned(), Stored { dtype: dtype.to_owned(), shape, bytes });
        }
        Ok(Exported { dir: dir.to_owned(), arrays })
    }

    fn get(&self, name: &str, dtype: &str) -> Result<&Stored> {
        let stored = self.arrays.get(name).ok_or_else(|| format!("{}: no array {name}", self.dir.display()))?;
        if stored.dtype != dtype || stored.bytes.len() != 4 * stored.shape.iter().product::<usize>() {
            return Err(format!("{}: {name} is {} {:?}, not {dtype}", self.dir.display(), stored.dtype, stored.shape));
        }
        Ok(stored)
    }

    fn f32s(&self, name: &str) -> Result<Vec<f32>> {
        let words = self.get(name, "float32")?.bytes.chunks_exact(4);
        Ok(words.map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect())
    }

    fn u32s(&self, name: &str) -> Result<Vec<u32>> {
        let words = self.get(name, "uint32")?.bytes.chunks_exact(4);
        Ok(words.map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect())
    }

    fn shape(&self, name: &str) -> Result<&[usize]> {
        Ok(&self.arrays.get(name).ok_or_else(|| format!("{}: no array {name}", self.dir.display()))?.shape)
    }
}

/// The dtypes of the op list: float32 values cast as MLX's `astype` casts them, and the scales
/// of `mx.quantize` (which MLX returns in the weight's dtype) as this dtype's slice.
trait Dtype: Float {
    const LABEL: &'static str;
    fn scales(values: &[Self]) -> FloatSlice<'_>;
}

impl Dtype for f32 {
    const LABEL: &'static str = "float32";
    fn scales(values: &[f32]) -> FloatSlice<'_> {
        values.into()
    }
}

impl Dtype for bf16 {
    const LABEL: &'static str = "bfloat16";
    fn scales(values: &[bf16]) -> FloatSlice<'_> {
        values.into()
    }
}

fn cast<T: Float>(values: &[f32]) -> Vec<T> {
    values.iter().map(|&x| T::from_f32(x)).collect()
}

/// `[B, H, L, D]` (MLX's attention layout) as `[B, L, H, D]` (the kernels'), or back with the
/// two middle extents swapped.
fn swap_middle<T: Copy>(x: &[T], (b, h, l, d): (usize, usize, usize, usize)) -> Vec<T> {
    let mut out = Vec::with_capacity(x.len());
    for bi in 0..b {
        for li in 0..l {
            for hi in 0..h {
                let start = ((bi * h + hi) * l + li) * d;
                out.extend_from_slice(&x[start..start + d]);
            }
        }
    }
    out
}

/// Every op of the list this crate has a kernel for, in dtype `T`: `(name, output)`.
fn ops<T: Dtype>(inputs: &Exported, mlx: &Exported) -> Result<Vec<(&'static str, Vec<T>)>> {
    let err = |e: kernels::Error| e.to_string();
    let input = |name: &str| -> Result<Vec<T>> { Ok(cast::<T>(&inputs.f32s(name)?)) };
    let (a, b, w, c) = (input("a")?, input("b")?, input("w")?, input("c")?);
    let (m, k) = (inputs.shape("a")?[0], inputs.shape("a")?[1]);
    let n = inputs.shape("b")?[1];
    let a_view = MatRef::row_major(&a, m, k).map_err(err)?;
    let none = GemmOptions::default();
    let mut out = Vec::new();

    let mut y = vec![T::default(); m * n];
    gemm(a_view, MatRef::row_major(&b, k, n).map_err(err)?, &mut y, &none).map_err(err)?;
    out.push(("matmul", y));
    let mut y = vec![T::default(); m * n];
    gemm(a_view, MatRef::row_major(&w, n, k).map_err(err)?.t(), &mut y, &none).map_err(err)?;
    out.push(("linear", y));
    // `addmm(c, a, b)` with a full `[M, N]` addend: each row is a product whose bias is that
    // row of `c`.
    let mut y = vec![T::default(); m * n];
    for (i, row) in y.chunks_exact_mut(n).enumerate() {
        let options = GemmOptions { bias: Some(&c[i * n..(i + 1) * n]), ..GemmOptions::default() };
        let a_row = MatRef::row_major(&a[i * k..(i + 1) * k], 1, k).map_err(err)?;
        gemm(a_row, MatRef::row_major(&b, k, n).map_err(err)?, row, &options).map_err(err)?;
    }
    out.push(("addmm", y));

    let dims = inputs.shape("q")?;
    let &[batch, heads, tokens, head_dim] = dims else { return Err(format!("q is {dims:?}, not [B, H, L, D]")) };
    let bhld = (batch, heads, tokens, head_dim);
    let (q, kk, v) =
        (swap_middle(&input("q")?, bhld), swap_middle(&input("k")?, bhld), swap_middle(&input("v")?, bhld));
    let shape = AttentionShape { batch, query_heads: heads, kv_heads: heads, queries: tokens, keys: tokens, head_dim };
    let mut y = vec![T::default(); q.len()];
    attention(AttentionInputs { shape, q: &q, k: &kk, v: &v, scale: 0.125, mask: None }, &mut y).map_err(err)?;
    out.push(("sdpa", swap_middle(&y, (batch, tokens, heads, head_dim))));

    let packed = mlx.u32s(&format!("qparam_w.{}", T::LABEL))?;
    let scales = cast::<T>(&mlx.f32s(&format!("qparam_scales.{}", T::LABEL))?);
    let biases = cast::<T>(&mlx.f32s(&format!("qparam_biases.{}", T::LABEL))?);
    let affine = Scales::Affine { scales: T::scales(&scales), biases: T::scales(&biases) };
    let quantization = Quantization::affine(4, 64).map_err(err)?;
    let wq = QuantizedMatrix::new(&packed, affine, quantization, n, k).map_err(err)?;
    let mut y = vec![T::default(); m * n];
    quantized_matmul(a_view, &wq, &mut y, &none).map_err(err)?;
    out.push(("quantized_matmul", y));

    let (norm_w, norm_b) = (input("norm_w")?, input("norm_b")?);
    let mut y = vec![T::default(); a.len()];
    kernels::rms_norm::rms_norm(&a, Some(&norm_w), 1e-6, k, &mut y).map_err(err)?;
    out.push(("rms_norm", y));
    let mut y = vec![T::default(); a.len()];
    kernels::layer_norm::layer_norm(&a, Some(&norm_w), Some(&norm_b), 1e-6, k, &mut y).map_err(err)?;
    out.push(("layer_norm", y));
    let mut y = vec![T::default(); a.len()];
    // The op list runs with MLX's CPU JIT off: the ops one by one.
    kernels::gelu::gelu_approx(kernels::gelu::CubicTerm::Separate, &a, &mut y).map_err(err)?;
    out.push(("gelu_approx", y));
    let mut y = vec![T::default(); a.len()];
    kernels::exp::exp_slice(&a, &mut y).map_err(err)?;
    out.push(("exp", y));
    // MLX's `tanh` of bf16 computes the C library's `tanhf` of the widened value and rounds.
    let widened: Vec<f32> = a.iter().map(|x| x.to_f32()).collect();
    let mut y = vec![0.0f32; a.len()];
    kernels::tanh::tanh_slice(&widened, &mut y);
    out.push(("tanh", cast::<T>(&y)));
    Ok(out)
}

fn write<T: Dtype>(dir: &Path, outputs: &[(&str, Vec<T>)]) -> Result<()> {
    for (name, values) in outputs {
        let path = dir.join(format!("{name}.{}.bin", T::LABEL));
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_f32().to_le_bytes()).collect();
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [inputs, mlx, out] = args.as_slice() else {
        return Err("usage: cpu_arithmetic INPUTS_DIR MLX_DIR OUT_DIR".into());
    };
    let (inputs, mlx) = (Exported::read(inputs)?, Exported::read(mlx)?);
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    write(out, &ops::<f32>(&inputs, &mlx)?)?;
    write(out, &ops::<bf16>(&inputs, &mlx)?)?;
    eprintln!("cpu_arithmetic: {} on {}", kernels::cpu::isa(), std::env::consts::ARCH);
    Ok(())
}
