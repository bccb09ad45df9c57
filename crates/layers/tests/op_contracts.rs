//! Every op of the op layer fails or succeeds the same way under both executions: a call that
//! breaks the op's documented contract is refused with the same typed error, naming the op,
//! whether MLX's ops or the host kernels would have computed it; a call that keeps it gives the
//! same result under both, including with operands the host kernels do not take (float16).

extern crate gemma_vision_layers as layers;

use layers::ops::{self, QuantizedWeight};
use layers::{ClipBounds, Error, Execution, Quantization, RopeTables};
use tensor::{Array, Dtype, SharedArray};

fn ramp(shape: &[i32], dtype: Dtype) -> Array {
    let n: i32 = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|i| ((i % 13) as f32 - 6.0) / 8.0).collect();
    Array::from_slice(&values, shape).unwrap().astype(dtype).unwrap()
}

fn scalar(value: f32) -> SharedArray {
    SharedArray::new(Array::scalar(value).unwrap()).unwrap()
}

/// Runs `op` under both executions and returns the refusal's message, asserting that both
/// refused it as `Error::Input` of the op `block`, with the same message.
fn refused(block: &str, op: impl Fn(Execution) -> layers::Result<Array>) -> String {
    let messages: Vec<String> = [Execution::Mlx, Execution::Host]
        .into_iter()
        .map(|execution| match op(execution) {
            Err(Error::Input { block: b, what }) if b == block => what,
            Err(other) => panic!("{block} under {execution:?}: another error: {other}"),
            Ok(y) => panic!("{block} under {execution:?}: accepted, gave {:?}", y.shape()),
        })
        .collect();
    assert_eq!(messages[0], messages[1], "{block}: the two executions refuse differently");
    messages[0].clone()
}

/// Asserts that `op` succeeds under both executions with the same bits.
fn same(what: &str, op: impl Fn(Execution) -> layers::Result<Array>) {
    let (mlx, host) = (op(Execution::Mlx).unwrap(), op(Execution::Host).unwrap());
    assert_eq!((mlx.shape(), mlx.dtype()), (host.shape(), host.dtype()), "{what}");
    let bytes = |a: &Array| a.with_bytes(<[u8]>::to_vec).unwrap();
    assert!(bytes(&mlx) == bytes(&host), "{what}: the executions' bits differ");
}

#[test]
fn products_refuse_mismatched_operands_under_both_executions() {
    let (x, w) = (ramp(&[3, 5], Dtype::F32), ramp(&[4, 6], Dtype::F32));
    let message = refused("linear", |e| ops::linear(e, &x, &w, None, None));
    assert!(message.contains("[out, 5]"), "{message}");
    let (w, bias) = (ramp(&[4, 5], Dtype::F32), ramp(&[3], Dtype::F32));
    refused("linear", |e| ops::linear(e, &x, &w, Some(&bias), None));
    let loose = ClipBounds {
        input_min: SharedArray::new(ramp(&[2], Dtype::F32)).unwrap(),
        input_max: scalar(1.0),
        output_min: scalar(-1.0),
        output_max: scalar(1.0),
    };
    let message = refused("linear", |e| ops::linear(e, &x, &w, None, Some(&loose)));
    assert!(message.contains("input_min must be 0-d"), "{message}");
    refused("linear", |e| ops::linear(e, &Array::scalar(1.0f32).unwrap(), &w, None, None));

    let (a, b) = (ramp(&[2, 3, 4], Dtype::Bf16), ramp(&[3, 4, 5], Dtype::Bf16));
    refused("matmul", |e| ops::matmul(e, &a, &b));
    refused("contract tokens", |e| {
        ops::contract_tokens(e, &ramp(&[2, 3, 4], Dtype::F32), &ramp(&[2, 5, 4], Dtype::F32))
    });

    let q = Quantization::affine(4, 32).unwrap();
    let (packed, scales) = (Array::zeros(&[4, 8], Dtype::U32).unwrap(), ramp(&[4, 2], Dtype::F32));
    let biases = ramp(&[4, 2], Dtype::F32);
    let weight = QuantizedWeight { weight: &packed, scales: &scales, biases: Some(&biases), quantization: q };
    let message =
        refused("quantized linear", |e| ops::quantized_linear(e, &ramp(&[2, 48], Dtype::F32), weight, None, None));
    assert!(message.contains("multiple of the group size"), "{message}");
    let no_biases = QuantizedWeight { biases: None, ..weight };
    let message =
        refused("quantized linear", |e| ops::quantized_linear(e, &ramp(&[2, 64], Dtype::F32), no_biases, None, None));
    assert!(message.contains("affine biases"), "{message}");
    let float_packed = packed.astype(Dtype::F32).unwrap();
    let not_packed = QuantizedWeight { weight: &float_packed, ..weight };
    refused("quantized linear", |e| ops::quantized_linear(e, &ramp(&[2, 64], Dtype::F32), not_packed, None, None));
}

#[test]
fn norms_attention_and_elementwise_ops_refuse_mismatched_operands_under_both_executions() {
    let x = ramp(&[2, 3, 8], Dtype::Bf16);
    refused("rms norm", |e| ops::rms_norm(e, &x, Some(&ramp(&[7], Dtype::Bf16)), 1e-6));
    refused("rms norm", |e| ops::rms_norm(e, &Array::scalar(1.0f32).unwrap(), None, 1e-6));
    let (weight, bias) = (ramp(&[8], Dtype::F32), ramp(&[8, 1], Dtype::F32));
    refused("layer norm", |e| ops::layer_norm(e, &x, &weight, &bias, 1e-6));
    refused("vision rms norm", |e| ops::vision_rms_norm(e, &x, Some(&ramp(&[4], Dtype::Bf16)), None));
    let positions = Array::from_slice(&[0i32, 0, 0, 1, 1, 0], &[1, 3, 2]).unwrap();
    let rope = RopeTables::new(&positions, 8, 100.0, Dtype::F32).unwrap();
    let message = refused("rope", |e| ops::vision_rms_norm(e, &x, None, Some(&rope)));
    assert!(message.contains("[B, L, N, 8]"), "{message}");

    let (q, kv) = (ramp(&[1, 3, 4, 8], Dtype::F32), ramp(&[1, 5, 3, 8], Dtype::F32));
    refused("sdpa", |e| ops::sdpa(e, &q, &kv, &kv, 1.0, None));
    let kv = ramp(&[1, 5, 2, 8], Dtype::F32);
    let mask = ramp(&[3, 1, 3, 5], Dtype::F32);
    let message = refused("sdpa", |e| ops::sdpa(e, &q, &kv, &kv, 1.0, Some(&mask)));
    assert!(message.contains("does not broadcast"), "{message}");

    let (a, b) = (ramp(&[2, 4], Dtype::F32), ramp(&[1, 4], Dtype::F32));
    refused("add", |e| ops::add(e, &a, &b));
    refused("gelu mul", |e| ops::gelu_mul(e, &a, &b));
}

#[test]
fn calls_within_the_contracts_give_one_result_under_both_executions() {
    for dtype in [Dtype::F32, Dtype::Bf16, Dtype::F16] {
        let (x, w, bias) = (ramp(&[3, 5], dtype), ramp(&[4, 5], dtype), ramp(&[4], Dtype::F32));
        same(&format!("linear {dtype}"), |e| ops::linear(e, &x, &w, Some(&bias), None));
        let (a, b) = (ramp(&[2, 3, 4], dtype), ramp(&[2, 4, 5], dtype));
        same(&format!("matmul {dtype}"), |e| ops::matmul(e, &a, &b));
        let (tw, th) = (ramp(&[2, 6, 3], dtype), ramp(&[2, 6, 4], dtype));
        same(&format!("contract tokens {dtype}"), |e| ops::contract_tokens(e, &tw, &th));
        let x = ramp(&[2, 3, 8], dtype);
        same(&format!("rms norm {dtype}"), |e| ops::rms_norm(e, &x, Some(&ramp(&[8], dtype)), 1e-6));
        let (q, kv) = (ramp(&[1, 3, 4, 8], dtype), ramp(&[1, 5, 2, 8], dtype));
        same(&format!("sdpa {dtype}"), |e| ops::sdpa(e, &q, &kv, &kv, 0.5, None));
        same(&format!("gelu mul {dtype}"), |e| ops::gelu_mul(e, &x, &x));
        same(&format!("add {dtype}"), |e| ops::add(e, &x, &x));
    }
}
