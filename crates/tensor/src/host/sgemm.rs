//! Float32 matrix products on host memory through the BLAS MLX itself uses.

use crate::{Error, Result};
use std::ffi::c_int;
use std::sync::OnceLock;

/// A read-only row-major matrix view: `rows × cols` values, `stride` values between row
/// starts; [`t`](Matrix::t) views it transposed (no copy).
#[derive(Debug, Clone, Copy)]
pub struct Matrix<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    stride: usize,
    transposed: bool,
}

/// A writable row-major matrix view.
#[derive(Debug)]
pub struct MatrixMut<'a> {
    data: &'a mut [f32],
    rows: usize,
    cols: usize,
    stride: usize,
}

fn check_view(len: usize, rows: usize, cols: usize, stride: usize) -> Result<()> {
    let needed =
        if rows == 0 || cols == 0 { Some(0) } else { (rows - 1).checked_mul(stride).and_then(|n| n.checked_add(cols)) };
    let fits_i32 = [rows, cols, stride].iter().all(|&v| c_int::try_from(v).is_ok());
    if stride < cols || needed.is_none_or(|n| n > len) || !fits_i32 {
        return Err(Error::Shape {
            op: "host.matrix",
            detail: format!("{rows}×{cols} with row stride {stride} does not fit {len} values"),
        });
    }
    Ok(())
}

impl<'a> Matrix<'a> {
    /// Views `data` as `rows × cols` with row stride `stride` (≥ `cols`).
    pub fn new(data: &'a [f32], rows: usize, cols: usize, stride: usize) -> Result<Matrix<'a>> {
        check_view(data.len(), rows, cols, stride)?;
        Ok(Matrix { data, rows, cols, stride, transposed: false })
    }

    /// The transposed view.
    pub fn t(self) -> Matrix<'a> {
        Matrix { transposed: !self.transposed, ..self }
    }

    /// (rows, cols) of the logical matrix.
    fn shape(&self) -> (usize, usize) {
        if self.transposed { (self.cols, self.rows) } else { (self.rows, self.cols) }
    }
}

impl<'a> MatrixMut<'a> {
    /// Views `data` as `rows × cols` with row stride `stride` (≥ `cols`).
    pub fn new(data: &'a mut [f32], rows: usize, cols: usize, stride: usize) -> Result<MatrixMut<'a>> {
        check_view(data.len(), rows, cols, stride)?;
        Ok(MatrixMut { data, rows, cols, stride })
    }
}

type CblasSgemm = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    f32,
    *const f32,
    c_int,
    *const f32,
    c_int,
    f32,
    *mut f32,
    c_int,
);

/// `cblas_sgemm` as resolved in this process: the BLAS that also serves MLX's float32 matmuls.
fn cblas_sgemm() -> Option<CblasSgemm> {
    static SGEMM: OnceLock<Option<CblasSgemm>> = OnceLock::new();
    *SGEMM.get_or_init(|| {
        crate::status::init();
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; the symbol, when present,
        // has the standard CBLAS signature.
        let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"cblas_sgemm".as_ptr()) };
        (!symbol.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, CblasSgemm>(symbol) })
    })
}

/// The extents `(m, n, k)` of `c = a @ b`, or `None` when `c` is empty.
fn product_extents(a: &Matrix<'_>, b: &Matrix<'_>, c: &MatrixMut<'_>) -> Result<Option<(usize, usize, usize)>> {
    let ((m, k), (k2, n)) = (a.shape(), b.shape());
    if k != k2 || c.rows != m || c.cols != n {
        return Err(Error::Shape {
            op: "host.sgemm",
            detail: format!("{m}×{k} @ {k2}×{n} into {}×{}", c.rows, c.cols),
        });
    }
    Ok((m > 0 && n > 0).then_some((m, n, k)))
}

/// `c = alpha · a @ b + beta · c` for logical shapes `a: m × k`, `b: k × n`, `c: m × n`.
pub fn sgemm(alpha: f32, a: Matrix<'_>, b: Matrix<'_>, beta: f32, c: MatrixMut<'_>) -> Result<()> {
    let Some((m, n, k)) = product_extents(&a, &b, &c)? else { return Ok(()) };
    let sgemm =
        cblas_sgemm().ok_or(Error::Shape { op: "host.sgemm", detail: "no cblas_sgemm in this process".into() })?;
    const ROW_MAJOR: c_int = 101;
    let trans = |t: bool| if t { 112 } else { 111 };
    // SAFETY: every view was checked to fit its slice for its rows, cols and stride, the
    // logical shapes agree, and all extents fit in a C int. A stride of 0 (a view without
    // columns, never read) is passed as 1, the least leading dimension BLAS accepts.
    unsafe {
        sgemm(
            ROW_MAJOR,
            trans(a.transposed),
            trans(b.transposed),
            m as c_int,
            n as c_int,
            k as c_int,
            alpha,
            a.data.as_ptr(),
            a.stride.max(1) as c_int,
            b.data.as_ptr(),
            b.stride.max(1) as c_int,
            beta,
            c.data.as_mut_ptr(),
            c.stride.max(1) as c_int,
        );
    }
    Ok(())
}

/// [`sgemm`] computed on the calling thread alone, without changing the thread count of other
/// threads' BLAS calls (MLX's among them), where the linked BLAS allows it
/// ([`mlx_ffi::blas::sgemm_on_calling_thread`]); [`sgemm`] otherwise. For host kernels that
/// spread their own products over the cores.
pub(crate) fn sgemm_on_calling_thread(
    alpha: f32,
    a: Matrix<'_>,
    b: Matrix<'_>,
    beta: f32,
    c: MatrixMut<'_>,
) -> Result<()> {
    let Some((m, n, k)) = product_extents(&a, &b, &c)? else { return Ok(()) };
    if k == 0 {
        return sgemm(alpha, a, b, beta, c); // `beta · c`, with views BLIS's stride checks may refuse
    }
    // Element (i, j) of a view: `data[i·stride + j]`, or `data[j·stride + i]` transposed.
    let strides = |view: &Matrix<'_>| if view.transposed { (1, view.stride) } else { (view.stride, 1) };
    let ((rs_a, cs_a), (rs_b, cs_b)) = (strides(&a), strides(&b));
    crate::status::init();
    // SAFETY: as in `sgemm`: every view fits its slice for its extents and strides, and `c`
    // is a distinct mutable borrow.
    let done = unsafe {
        mlx_ffi::blas::sgemm_on_calling_thread(
            (m, n, k),
            alpha,
            (a.data.as_ptr(), rs_a, cs_a),
            (b.data.as_ptr(), rs_b, cs_b),
            beta,
            (c.data.as_mut_ptr(), c.stride, 1),
        )
    };
    if done { Ok(()) } else { sgemm(alpha, a, b, beta, c) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_with_strides_and_transposes() {
        // a: 2×3 inside a stride-4 buffer; b: 2×3 used transposed (3×2).
        let a = [1.0, 2.0, 3.0, 99.0, 4.0, 5.0, 6.0, 99.0];
        let b = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0];
        let mut c = [0.5f32; 4];
        sgemm(
            1.0,
            Matrix::new(&a, 2, 3, 4).unwrap(),
            Matrix::new(&b, 2, 3, 3).unwrap().t(),
            2.0,
            MatrixMut::new(&mut c, 2, 2, 2).unwrap(),
        )
        .unwrap();
        assert_eq!(c, [1.0 + 4.0, 1.0 + 5.0, 1.0 + 10.0, 1.0 + 11.0]);
        assert!(Matrix::new(&a, 3, 3, 4).is_err(), "view larger than the data");
        let mut small = [0f32; 3];
        let err = sgemm(
            1.0,
            Matrix::new(&a, 2, 3, 4).unwrap(),
            Matrix::new(&b, 2, 3, 3).unwrap().t(),
            0.0,
            MatrixMut::new(&mut small, 1, 3, 3).unwrap(),
        );
        assert!(err.is_err(), "mismatched output");
    }

    #[test]
    fn calling_thread_products_match_the_plain_sum() {
        // Extents with ones (vectors), padded strides and every transpose combination.
        for (m, k, n) in [(1, 1, 1), (1, 5, 3), (4, 1, 2), (7, 9, 1), (13, 31, 17)] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let (a_rows, a_cols) = if ta { (k, m) } else { (m, k) };
                let (b_rows, b_cols) = if tb { (n, k) } else { (k, n) };
                let a: Vec<f32> = (0..a_rows * (a_cols + 2)).map(|i| (i % 7) as f32 - 3.0).collect();
                let b: Vec<f32> = (0..b_rows * (b_cols + 1)).map(|i| (i % 5) as f32 * 0.5).collect();
                let view = |data, rows, cols, stride, t| {
                    let v = Matrix::new(data, rows, cols, stride).unwrap();
                    if t { v.t() } else { v }
                };
                let (av, bv) = (view(&a, a_rows, a_cols, a_cols + 2, ta), view(&b, b_rows, b_cols, b_cols + 1, tb));
                let at = |i: usize, j: usize| if ta { a[j * (a_cols + 2) + i] } else { a[i * (a_cols + 2) + j] };
                let bt = |i: usize, j: usize| if tb { b[j * (b_cols + 1) + i] } else { b[i * (b_cols + 1) + j] };
                let mut c = vec![1f32; m * (n + 3)];
                sgemm_on_calling_thread(2.0, av, bv, 0.5, MatrixMut::new(&mut c, m, n, n + 3).unwrap()).unwrap();
                for i in 0..m {
                    for j in 0..n + 3 {
                        let expected =
                            if j < n { 2.0 * (0..k).map(|p| at(i, p) * bt(p, j)).sum::<f32>() + 0.5 } else { 1.0 };
                        assert_eq!(c[i * (n + 3) + j], expected, "{m}×{k}×{n} {ta} {tb} at ({i}, {j})");
                    }
                }
            }
        }
    }
}
