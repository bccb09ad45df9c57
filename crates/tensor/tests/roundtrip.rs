//! Host → Array → host round trips for every element type, shape and view.

extern crate gemma_vision_tensor as tensor;

use half::{bf16, f16};
use proptest::prelude::*;
use tensor::{Array, Element};

/// A random shape of up to 3 axes and values filling it.
fn shaped<T: std::fmt::Debug + Clone>(
    element: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = (Vec<i32>, Vec<T>)> {
    prop::collection::vec(1i32..6, 0..4).prop_flat_map(move |shape| {
        let len = shape.iter().product::<i32>() as usize;
        (Just(shape), prop::collection::vec(element.clone(), len))
    })
}

/// A random matrix: rows, columns and row-major values.
fn matrix<T: std::fmt::Debug + Clone>(
    element: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = (usize, usize, Vec<T>)> {
    (2usize..6, 1usize..7).prop_flat_map(move |(rows, cols)| {
        (Just(rows), Just(cols), prop::collection::vec(element.clone(), rows * cols))
    })
}

fn round_trip<T: Element + PartialEq + std::fmt::Debug>(values: Vec<T>, shape: &[i32]) {
    let a = Array::from_slice(&values, shape).unwrap();
    assert_eq!(a.dtype(), T::DTYPE);
    assert_eq!(a.shape(), shape);
    assert_eq!(a.to_vec::<T>().unwrap(), values);
}

/// Reads a transposed and a strided view and compares with the same view computed on the host.
fn views<T: Element + PartialEq + std::fmt::Debug>(values: Vec<T>, rows: usize, cols: usize) {
    let a = Array::from_slice(&values, &[rows as i32, cols as i32]).unwrap();
    let transposed: Vec<T> =
        (0..cols).flat_map(|c| (0..rows).map(move |r| (r, c))).map(|(r, c)| values[r * cols + c]).collect();
    assert_eq!(a.t().unwrap().to_vec::<T>().unwrap(), transposed);
    let every_other: Vec<T> =
        (0..rows).flat_map(|r| (0..cols).step_by(2).map(move |c| (r, c))).map(|(r, c)| values[r * cols + c]).collect();
    let strided = a.slice(&[0, 0], &[rows as i32, cols as i32], Some(&[1, 2])).unwrap();
    assert_eq!(strided.to_vec::<T>().unwrap(), every_other);
    let tail: Vec<T> = values[cols..].to_vec();
    assert_eq!(a.slice_axis(0, 1, rows as i32).unwrap().to_vec::<T>().unwrap(), tail);
}

macro_rules! round_trip_tests {
    ($($name:ident: $ty:ty => $strategy:expr;)*) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            $(
                #[test]
                fn $name((shape, values) in shaped::<$ty>($strategy), (rows, cols, grid) in matrix::<$ty>($strategy)) {
                    round_trip(values, &shape);
                    views(grid, rows, cols);
                }
            )*
        }
    };
}

round_trip_tests! {
    u8_round_trip: u8 => any::<u8>();
    u32_round_trip: u32 => any::<u32>();
    i32_round_trip: i32 => any::<i32>();
    i64_round_trip: i64 => any::<i64>();
    f32_round_trip: f32 => -1e6f32..1e6f32;
    f16_round_trip: f16 => (-6e4f32..6e4f32).prop_map(f16::from_f32);
    bf16_round_trip: bf16 => (-1e30f32..1e30f32).prop_map(bf16::from_f32);
}

#[test]
fn bools_round_trip_through_u8() {
    let a = Array::from_bools(&[true, false, true], &[3]).unwrap();
    assert_eq!(a.dtype(), tensor::Dtype::Bool);
    assert_eq!(a.astype(tensor::Dtype::U8).unwrap().to_vec::<u8>().unwrap(), [1, 0, 1]);
}
