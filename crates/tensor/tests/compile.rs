//! `Compiled`: a function compiled by MLX gives the eager function's values (where the JIT
//! fuses, on x86-64, the same bits), on any thread, for inputs of any shape when shapeless; a
//! failure while tracing is that failure.

extern crate gemma_vision_tensor as tensor;

use tensor::{Array, Compiled, Dtype, Error};

fn scaled_sum(inputs: &[Array]) -> tensor::Result<Vec<Array>> {
    let [a, b] = inputs else { return Err(Error::Shape { op: "scaled_sum", detail: "two inputs".into() }) };
    Ok(vec![a.mul(0.5)?.add(b)?.tanh()?, a.sub(b)?])
}

fn refuses(_: &[Array]) -> tensor::Result<Vec<Array>> {
    Err(Error::Shape { op: "refuses", detail: "on purpose".into() })
}

fn values(n: i32) -> (Array, Array) {
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.37 - 3.0).collect();
    let b: Vec<f32> = (0..n).map(|i| 1.5 - i as f32 * 0.11).collect();
    (Array::from_slice(&a, &[n]).unwrap(), Array::from_slice(&b, &[n]).unwrap())
}

#[test]
fn compiled_outputs_match_the_eager_function() {
    let compiled = Compiled::new("scaled_sum", scaled_sum, true).unwrap();
    for n in [1, 7, 64] {
        let (a, b) = values(n);
        let eager = scaled_sum(&[a.clone(), b.clone()]).unwrap();
        let ours = compiled.apply(&[&a, &b]).unwrap();
        assert_eq!(ours.len(), 2);
        for (ours, eager) in ours.iter().zip(&eager) {
            assert_eq!(ours.dtype(), Dtype::F32);
            assert_eq!(ours.shape(), [n]);
            let (ours, eager) = (ours.to_vec::<f32>().unwrap(), eager.to_vec::<f32>().unwrap());
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            if cfg!(target_arch = "x86_64") {
                assert_eq!(bits(&ours), bits(&eager), "n = {n}");
            } else {
                assert!(ours.iter().zip(&eager).all(|(x, y)| (x - y).abs() <= 1e-6), "n = {n}");
            }
        }
    }
}

#[test]
fn a_compiled_function_serves_every_thread() {
    let compiled = Compiled::new("scaled_sum", scaled_sum, true).unwrap();
    std::thread::scope(|scope| {
        for n in [3, 5, 9] {
            let compiled = &compiled;
            scope.spawn(move || {
                let (a, b) = values(n);
                let out = compiled.apply(&[&a, &b]).unwrap();
                assert_eq!(out[1].to_vec::<f32>().unwrap(), a.sub(&b).unwrap().to_vec::<f32>().unwrap());
            });
        }
    });
}

#[test]
fn a_failure_while_tracing_is_returned() {
    let compiled = Compiled::new("refuses", refuses, false).unwrap();
    let (a, _) = values(4);
    match compiled.apply(&[&a]).unwrap_err() {
        Error::Shape { op: "refuses", detail } => assert_eq!(detail, "on purpose"),
        other => panic!("unexpected error {other:?}"),
    }
    // The process carries on.
    let compiled = Compiled::new("scaled_sum", scaled_sum, false).unwrap();
    let (a, b) = values(4);
    assert_eq!(compiled.apply(&[&a, &b]).unwrap().len(), 2);
}

fn difference(inputs: &[Array]) -> tensor::Result<Vec<Array>> {
    let [a, b] = inputs else { return Err(Error::Shape { op: "difference", detail: "two inputs".into() }) };
    Ok(vec![a.sub(b)?])
}

fn product(inputs: &[Array]) -> tensor::Result<Vec<Array>> {
    let [a, b] = inputs else { return Err(Error::Shape { op: "product", detail: "two inputs".into() }) };
    Ok(vec![a.mul(b)?])
}

#[test]
fn each_compiled_function_computes_itself_on_every_thread() {
    // MLX keeps each thread's traces keyed by the compiled function's address. One thread
    // traces one compiled function after another, each made (and, before, dropped) on this one:
    // every call must compute its own function, never a trace kept for an earlier one.
    let (to_worker, jobs) = std::sync::mpsc::channel::<&'static Compiled>();
    let (to_main, results) = std::sync::mpsc::channel::<Vec<f32>>();
    let worker = std::thread::spawn(move || {
        for compiled in jobs {
            let (a, b) = values(4);
            to_main.send(compiled.apply(&[&a, &b]).unwrap()[0].to_vec::<f32>().unwrap()).unwrap();
        }
    });
    let (a, b) = values(4);
    for round in 0..8 {
        let (function, eager): (tensor::TracedFn, Array) =
            if round % 2 == 0 { (difference, a.sub(&b).unwrap()) } else { (product, a.mul(&b).unwrap()) };
        let compiled = Compiled::new("round", function, false).unwrap();
        to_worker.send(compiled).unwrap();
        assert_eq!(results.recv().unwrap(), eager.to_vec::<f32>().unwrap(), "round {round}");
    }
    drop(to_worker);
    worker.join().unwrap();
}
