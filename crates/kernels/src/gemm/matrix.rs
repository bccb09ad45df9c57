//! [`MatRef`]: a read-only strided matrix view, and how MLX classifies its layout.

use crate::{Error, Float, Result};

/// A read-only `rows × cols` matrix view over a slice: element `(i, j)` is
/// `data[i · row_stride + j · col_stride]`. A row-major matrix has strides `(cols, 1)`; its
/// transpose ([`MatRef::t`]) is the same data with the strides swapped, as `W.T` is in MLX.
#[derive(Debug, Clone, Copy)]
pub struct MatRef<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

/// How MLX's CPU matmul (`matmul_general`'s `check_transpose`) sees an operand: row-contiguous,
/// column-contiguous ("transposed", passed to the BLAS as is), or neither (copied to
/// row-contiguous first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MlxLayout {
    /// Strides `(cols, 1)`.
    RowContiguous,
    /// Not row-contiguous, strides `(1, rows)`.
    ColContiguous,
    /// Anything else: MLX copies it to row-contiguous before the product.
    Strided,
}

impl<'a, T: Float> MatRef<'a, T> {
    /// A row-major `rows × cols` matrix: `data` holds exactly `rows · cols` elements.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Result<Self> {
        let len = rows.checked_mul(cols).ok_or_else(|| Error::shape("MatRef", format!("{rows} × {cols} overflows")))?;
        if data.len() != len {
            return Err(Error::shape(
                "MatRef",
                format!("{rows} × {cols} row-major needs {len} elements, got {}", data.len()),
            ));
        }
        Ok(MatRef { data, rows, cols, row_stride: cols, col_stride: 1 })
    }

    /// A view with arbitrary element strides; every element `(i, j)` must lie inside `data`.
    pub fn strided(data: &'a [T], rows: usize, cols: usize, row_stride: usize, col_stride: usize) -> Result<Self> {
        if rows > 0 && cols > 0 {
            let last = (rows - 1)
                .checked_mul(row_stride)
                .and_then(|r| (cols - 1).checked_mul(col_stride).and_then(|c| r.checked_add(c)))
                .ok_or_else(|| Error::shape("MatRef", "strides overflow"))?;
            if last >= data.len() {
                return Err(Error::shape(
                    "MatRef",
                    format!(
                        "{rows} × {cols} with strides ({row_stride}, {col_stride}) reaches element {last} of {}",
                        data.len()
                    ),
                ));
            }
        }
        Ok(MatRef { data, rows, cols, row_stride, col_stride })
    }

    /// Row-contiguous rows `row_stride` apart, for callers that sliced `data` to end with the
    /// last row (`(rows − 1) · row_stride + cols` elements, `rows ≥ 1`): what
    /// [`strided`](Self::strided) checks, asserted in debug builds (a view that broke it would
    /// panic on a slice bound when read, never read out of bounds).
    pub(crate) fn rows_apart(data: &'a [T], rows: usize, cols: usize, row_stride: usize) -> Self {
        debug_assert!(rows >= 1 && cols <= row_stride && data.len() == (rows - 1) * row_stride + cols);
        MatRef { data, rows, cols, row_stride, col_stride: 1 }
    }

    /// The transpose: the same elements, rows and columns swapped (no copy).
    pub fn t(self) -> Self {
        MatRef {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn row_stride(&self) -> usize {
        self.row_stride
    }

    pub fn col_stride(&self) -> usize {
        self.col_stride
    }

    /// The underlying slice.
    pub fn data(&self) -> &'a [T] {
        self.data
    }

    /// Element `(i, j)`; `None` outside the view.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        if i >= self.rows || j >= self.cols {
            return None;
        }
        self.data.get(i * self.row_stride + j * self.col_stride).copied()
    }

    /// Element `(i, j)`, for callers that checked `i < rows`, `j < cols` (the constructor
    /// guaranteed every such element lies inside `data`).
    #[inline(always)]
    pub(crate) fn at(&self, i: usize, j: usize) -> T {
        debug_assert!(i < self.rows && j < self.cols);
        // Every in-range (i, j) was checked to lie inside `data` at construction; an
        // out-of-range index panics on the slice bound rather than reading out of bounds.
        self.data[i * self.row_stride + j * self.col_stride]
    }

    /// MLX's classification of this view as a matmul operand (its `check_transpose`, in the
    /// same order: row-contiguous first).
    pub fn mlx_layout(&self) -> MlxLayout {
        if self.row_stride == self.cols && self.col_stride == 1 {
            MlxLayout::RowContiguous
        } else if self.row_stride == 1 && self.col_stride == self.rows {
            MlxLayout::ColContiguous
        } else {
            MlxLayout::Strided
        }
    }
}
