//! `Array::from_vec` hands a host buffer to MLX without copying; `Array::with_slice` reads an
//! array's elements in place. Buffers are freed when the last array using them goes, on any
//! thread (a `SharedArray` is what crosses one).

extern crate gemma_vision_tensor as tensor;

use tensor::{Array, Dtype, Error, SharedArray, memory};

#[test]
fn from_vec_round_trips_and_checks_the_shape() {
    let values: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
    let array = Array::from_vec(values.clone(), &[2, 3, 4]).unwrap();
    assert_eq!((array.shape(), array.dtype()), (vec![2, 3, 4], Dtype::F32));
    assert_eq!(array.to_vec::<f32>().unwrap(), values);
    let doubled = array.mul(2.0).unwrap();
    assert_eq!(doubled.with_slice(|s: &[f32]| s[5]).unwrap(), values[5] * 2.0);
    let ints = Array::from_vec(vec![7i32, -1, 3], &[3]).unwrap();
    assert_eq!(ints.to_vec::<i32>().unwrap(), vec![7, -1, 3]);
    assert_eq!(Array::from_vec(Vec::<f32>::new(), &[0, 4]).unwrap().shape(), vec![0, 4]);
    for shape in [&[5][..], &[2, -3]] {
        match Array::from_vec(vec![1f32; 6], shape) {
            Err(Error::Shape { op: "from_vec", detail }) => assert!(detail.contains("shape"), "{detail}"),
            other => panic!("{shape:?}: {other:?}"),
        }
    }
}

#[test]
fn with_slice_checks_the_dtype_and_reads_strided_views_in_order() {
    let a = Array::from_slice(&[1f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let transposed = a.transpose(&[1, 0]).unwrap();
    assert_eq!(transposed.with_slice(<[f32]>::to_vec).unwrap(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    match a.with_slice(|s: &[i32]| s.len()) {
        Err(Error::Dtype { op: "with_slice", expected: Dtype::I32, actual: Dtype::F32 }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn owned_buffers_are_freed_with_their_last_array_on_any_thread() {
    let len = 1 << 20; // 4 MiB per buffer
    let warm = Array::from_vec(vec![0f32; len], &[len as i32]).unwrap().sum(&[0], false).unwrap();
    warm.eval().unwrap();
    drop(warm);
    memory::clear_cache().unwrap();
    let baseline = (memory::active_memory().unwrap(), resident_bytes());
    for round in 0..20 {
        let a = SharedArray::new(Array::from_vec(vec![(round % 4) as f32; len], &[len as i32]).unwrap()).unwrap();
        let total = std::thread::spawn(move || {
            let total = a.sum(&[0], false).unwrap().item::<f32>().unwrap();
            drop(a);
            total
        })
        .join()
        .unwrap();
        assert_eq!(total, (round % 4) as f32 * len as f32, "sums of integers below 2^24 are exact");
    }
    memory::clear_cache().unwrap();
    let after = (memory::active_memory().unwrap(), resident_bytes());
    assert!(after.0 <= baseline.0 + 4096, "MLX active memory grew from {} to {} bytes", baseline.0, after.0);
    // 20 leaked buffers would add 80 MiB of resident memory.
    assert!(after.1 < baseline.1 + (16 << 20), "resident memory grew from {} to {} bytes", baseline.1, after.1);
}

/// This process's resident set size (`VmRSS` of /proc/self/status), in bytes.
fn resident_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}
