"""The machine's float32 GEMM peak, for the "% peak" columns of `cargo xtask bench e2e` and
`cargo xtask bench kernels`: NumPy's matmul (the OpenBLAS its wheel bundles, on every core) at
square and vision-tower shapes, best of --repeats per shape, 2·M·K·N flops per product.

Prints one JSON line: {"blas": ..., "threads": ..., "gemm": [{"m", "k", "n", "gflops"}...],
"peak_gflops": the largest}. A measure of the machine, independent of MLX, of the BLAS libmlx
uses and of our kernels.
"""

import argparse
import json
import os
import time

import numpy as np

SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (2520, 768, 768), (2520, 768, 3072), (2520, 3072, 768)]


def blas_name():
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 (older NumPy: no dict mode)
        return "NumPy's BLAS"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    entries = []
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((n, k), dtype=np.float32)
        a @ w.T
        best = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            a @ w.T
            best = min(best, time.perf_counter() - start)
        entries.append(dict(m=m, k=k, n=n, gflops=round(2 * m * k * n / best / 1e9, 2)))
    print(json.dumps(dict(blas=blas_name(), threads=os.cpu_count(), gemm=entries,
                          peak_gflops=max(e["gflops"] for e in entries))), flush=True)


if __name__ == "__main__":
    main()
