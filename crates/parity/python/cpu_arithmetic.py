"""Stock MLX's CPU arithmetic on two platforms: the same op list, the same input bytes.

`inputs --out IN.npz` writes seeded inputs (float32; bfloat16 cases cast them inside MLX, which
rounds to nearest even on every platform). `run --inputs IN.npz --out OUT.npz` evaluates the op
list on the default device of the MLX it is run with (x86-64 natively, aarch64 under
`qemu-aarch64`), saving each output widened to float32 (exact for bfloat16). `compare X86.npz
AARCH64.npz --inputs IN.npz` prints one row per op and dtype (identical, or how many values
differ and by how many ULP), then checks the arithmetic model the host kernels implement:
float32 `matmul` and `x @ w.T` are, per output element, a sum over k in increasing order, with a
rounding after each multiply and each add on x86-64 and one fused multiply-add per step on
aarch64. It exits non-zero when the model does not reproduce a platform's bits.

`run` also saves the 4-bit weight `mx.quantize` made on that platform (`qparam_*`, the packed
words and the scales and biases widened to float32), which `quantized_matmul` multiplies by.
`export NPZ DIR` writes each array of an `.npz` as a raw little-endian file `DIR/NAME.bin`
with `DIR/manifest.txt` (`NAME DTYPE DIM...` per line), what the Rust example
`crates/kernels/examples/cpu_arithmetic.rs` reads. `kernels --platform NAME OURS MLX.npz ...`
(one `--platform` per pair: the directory the example wrote, the platform's MLX outputs) prints
one row per op, dtype and platform: our kernels' bits against stock MLX's there, and exits
non-zero unless every row is identical.
"""

import argparse
import sys

import numpy as np

SEED = 20261203


def make_inputs():
    rng = np.random.default_rng(SEED)
    normal = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return {
        "a": normal(64, 768),
        "b": normal(768, 96),
        "w": normal(96, 768),
        "c": normal(64, 96),
        "q": normal(1, 4, 256, 64),
        "k": normal(1, 4, 256, 64),
        "v": normal(1, 4, 256, 64),
        "norm_w": normal(768),
        "norm_b": normal(768),
        "img": normal(1, 32, 32, 3),
        "kernel": normal(16, 3, 3, 3),
    }


def ops(mx, nn, inputs, dtype):
    t = {name: mx.array(value).astype(dtype) for name, value in inputs.items()}
    wq, scales, biases = quantized_weight(mx, t)
    return {
        "matmul": lambda: t["a"] @ t["b"],
        "linear": lambda: t["a"] @ t["w"].T,
        "addmm": lambda: mx.addmm(t["c"], t["a"], t["b"]),
        "sdpa": lambda: mx.fast.scaled_dot_product_attention(t["q"], t["k"], t["v"], scale=0.125),
        "quantized_matmul": lambda: mx.quantized_matmul(t["a"], wq, scales, biases, transpose=True, group_size=64, bits=4),
        "rms_norm": lambda: mx.fast.rms_norm(t["a"], t["norm_w"], 1e-6),
        "layer_norm": lambda: mx.fast.layer_norm(t["a"], t["norm_w"], t["norm_b"], 1e-6),
        "softmax": lambda: mx.softmax(t["a"], axis=-1),
        "rope": lambda: mx.fast.rope(t["q"], 64, traditional=False, base=10000.0, scale=1.0, offset=0),
        "gelu_approx": lambda: nn.gelu_approx(t["a"]),
        "exp": lambda: mx.exp(t["a"]),
        "tanh": lambda: mx.tanh(t["a"]),
        "conv2d": lambda: mx.conv2d(t["img"], t["kernel"], padding=1),
    }


def quantized_weight(mx, t):
    """`w` as `quantized_matmul` takes it: 4 bits, groups of 64, affine."""
    return mx.quantize(t["w"], group_size=64, bits=4)


def run(inputs_path, out_path):
    import mlx.core as mx
    import mlx.nn as nn

    inputs = dict(np.load(inputs_path))
    outputs = {}
    for label, dtype in (("float32", mx.float32), ("bfloat16", mx.bfloat16)):
        for name, op in ops(mx, nn, inputs, dtype).items():
            out = op().astype(mx.float32)
            mx.eval(out)
            outputs[f"{name}.{label}"] = np.array(out)
        wq, scales, biases = quantized_weight(mx, {"w": mx.array(inputs["w"]).astype(dtype)})
        outputs[f"qparam_w.{label}"] = np.array(wq)
        outputs[f"qparam_scales.{label}"] = np.array(scales.astype(mx.float32))
        outputs[f"qparam_biases.{label}"] = np.array(biases.astype(mx.float32))
    np.savez(out_path, mlx=np.array(mx.__version__), **outputs)


def ulps(x, y):
    """Distance in float32 steps, per element (both finite)."""
    xi = x.view(np.int32).astype(np.int64)
    yi = y.view(np.int32).astype(np.int64)
    xi = np.where(xi < 0, -(xi & 0x7FFFFFFF), xi)
    yi = np.where(yi < 0, -(yi & 0x7FFFFFFF), yi)
    return np.abs(xi - yi)


def sequential_dot(a, b, fused):
    """a (m, k) @ b (k, n) as a k-ordered sum per element, float32 after every step. `fused`
    rounds `acc + a*b` once (the product is exact in float64, and so is the sum unless the
    exponents are far apart); otherwise the product and the sum are each rounded to float32."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        col, row = a[:, k : k + 1], b[k : k + 1, :]
        if fused:
            acc = (acc.astype(np.float64) + col.astype(np.float64) * row.astype(np.float64)).astype(np.float32)
        else:
            acc = (acc + (col * row).astype(np.float32)).astype(np.float32)
    return acc


def compare(x86_path, arm_path, inputs_path):
    x86, arm, inputs = np.load(x86_path), np.load(arm_path), dict(np.load(inputs_path))
    print(f"MLX {x86['mlx']} (x86-64) against MLX {arm['mlx']} (aarch64), same input bytes")
    print(f"{'op':<18} {'dtype':<9} {'x86-64 vs aarch64':>30}")
    for key in [k for k in x86.files if k != "mlx" and not k.startswith("qparam_")]:
        name, label = key.split(".")
        x, y = x86[key], arm[key]
        differ = int(np.count_nonzero(x.view(np.int32) != y.view(np.int32)))
        verdict = "identical" if differ == 0 else f"{differ} of {x.size} differ, max {ulps(x, y).max()} ULP"
        print(f"{name:<18} {label:<9} {verdict:>30}")
    failures = []
    for name, b in (("matmul", inputs["b"]), ("linear", inputs["w"].T.copy())):
        for platform, outputs, fused in (("x86-64", x86, False), ("aarch64", arm, True)):
            model = sequential_dot(inputs["a"], b, fused)
            got = outputs[f"{name}.float32"]
            differ = int(np.count_nonzero(model.view(np.int32) != got.view(np.int32)))
            kind = "fused multiply-add" if fused else "separate multiply and add"
            print(f"model: {name} float32 on {platform} = k-ordered {kind}: {differ} of {got.size} values differ")
            if differ:
                failures.append(f"{name} on {platform}")
    if failures:
        sys.exit(f"the arithmetic model does not reproduce: {', '.join(failures)}")


def export(npz_path, out_dir):
    import os

    os.makedirs(out_dir, exist_ok=True)
    arrays = np.load(npz_path)
    lines = []
    for name in arrays.files:
        value = arrays[name]
        if value.dtype.kind not in "fu" or value.dtype.itemsize != 4:
            continue
        value = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        value.tofile(os.path.join(out_dir, f"{name}.bin"))
        lines.append(" ".join([name, value.dtype.name, *map(str, value.shape)]))
    with open(os.path.join(out_dir, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def kernels(platforms):
    """Our kernels (a directory of `OP.DTYPE.bin`) against stock MLX (its `.npz`), per platform."""
    import os

    print(f"{'op':<18} {'dtype':<9} {'platform':<16} {'ours vs stock MLX':>34}")
    failures = []
    for platform, ours_dir, mlx_path in platforms:
        mlx = np.load(mlx_path)
        names = sorted(f[: -len(".bin")] for f in os.listdir(ours_dir) if f.endswith(".bin"))
        for key in sorted(names, key=lambda k: (k.split(".")[1] != "float32", k)):
            name, label = key.split(".")
            want = mlx[key].ravel()
            got = np.fromfile(os.path.join(ours_dir, f"{key}.bin"), dtype="<f4")
            if got.size != want.size:
                verdict = f"{got.size} values, MLX has {want.size}"
            else:
                differ = int(np.count_nonzero(got.view(np.int32) != want.view(np.int32)))
                verdict = "identical" if differ == 0 else f"{differ} of {want.size} differ, max {ulps(got, want).max()} ULP"
            print(f"{name:<18} {label:<9} {platform:<16} {verdict:>34}")
            if verdict != "identical":
                failures.append(f"{name} {label} on {platform}")
    if failures:
        sys.exit(f"our kernels differ from stock MLX: {', '.join(failures)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("inputs").add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--inputs", required=True)
    r.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("x86")
    c.add_argument("aarch64")
    c.add_argument("--inputs", required=True)
    e = sub.add_parser("export")
    e.add_argument("npz")
    e.add_argument("dir")
    kp = sub.add_parser("kernels")
    kp.add_argument("--platform", nargs=3, action="append", required=True, metavar=("NAME", "OURS_DIR", "MLX_NPZ"))
    args = parser.parse_args()
    if args.command == "export":
        export(args.npz, args.dir)
    elif args.command == "kernels":
        kernels(args.platform)
    elif args.command == "inputs":
        np.savez(args.out, **make_inputs())
    elif args.command == "run":
        run(args.inputs, args.out)
    else:
        compare(args.x86, args.aarch64, args.inputs)


if __name__ == "__main__":
    main()
