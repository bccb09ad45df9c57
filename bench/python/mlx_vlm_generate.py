"""mlx-vlm's own generation, stock and accelerated, in one process: `cargo xtask bench mlx-vlm`.

    python mlx_vlm_generate.py --out DIR [--shape e2b|tiny] [--tokens N] [--image FILE]

Writes (once; reused while its stamp matches) a random checkpoint of `--shape` into DIR: e2b's
vision tower (16 layers, 768 wide, 12 heads of 64, clipped linears) and projector at a budget of
280 soft tokens, beside a small language model (2 layers, 1536 wide), with the tokenizer and
processor files of the tests' tiny_gemma4.py. Then, on one model loaded by mlx-vlm's `load`:
a text-only warm-up; `stream_generate` with the image, greedy, stock; `accelerate(model)`; the
same call again. For each: the time to the first token (from the call: preprocessing, the vision
encoder, prefill) and mlx-vlm's own decode rate (`generation_tps`), and the tokens (the stop
tokens masked, so that both decode `--tokens`). Prints one JSON object.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "crates" / "python" / "tests"))
from tiny_gemma4 import IDS, write_checkpoint  # noqa: E402

STOP_TOKENS = [IDS["<eos>"], IDS["<end_of_turn>"]]

SHAPES = {
    "e2b": dict(
        vision=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=16, num_attention_heads=12,
                    num_key_value_heads=12, head_dim=64, use_clipped_linears=True, standardize=False, patch_size=16,
                    position_embedding_size=10240, pooling_kernel_size=3),
        text=dict(hidden_size=1536, intermediate_size=3072, num_attention_heads=8, head_dim=128, global_head_dim=128),
        budget=280),
    "tiny": dict(vision=None, text=None, budget=16),
}
SKIMAGE_ROCKET = Path(np.__file__).resolve().parents[1] / "skimage" / "data" / "rocket.jpg"


def checkpoint(out: Path, shape: str) -> Path:
    spec = SHAPES[shape]
    directory = out / f"gemma4-{shape}"
    stamp = json.dumps(dict(spec, version=1), sort_keys=True)
    if (directory / "bench.stamp").exists() and (directory / "bench.stamp").read_text() == stamp:
        return directory
    write_checkpoint(directory, "gemma4", vision=spec["vision"], text=spec["text"], budget=spec["budget"], seed=11)
    (directory / "bench.stamp").write_text(stamp)
    return directory


def never_stop(_tokens, logits):
    """A logits processor masking the stop tokens: every run decodes its `--tokens`."""
    import mlx.core as mx

    mask = mx.zeros(logits.shape[-1], dtype=mx.bool_)
    mask[mx.array(STOP_TOKENS)] = True
    return mx.where(mask, mx.array(-mx.inf, dtype=logits.dtype), logits)


def timed_generation(model, processor, prompt: str, images: list, tokens: int) -> dict:
    from mlx_vlm.generate import stream_generate

    started = time.perf_counter()
    first = None
    results = []
    steps = stream_generate(model, processor, prompt, image=images or None, max_tokens=tokens, temperature=0.0,
                            logits_processors=[never_stop])
    for result in steps:
        if first is None:
            first = time.perf_counter() - started
        results.append(result)
    last = results[-1]
    # The last result closes the stream (its finish_reason) and repeats the last token.
    tokens = [r.token for r in results][: last.generation_tokens]
    return dict(ttft=first, seconds=time.perf_counter() - started, tokens=tokens,
                generation_tps=last.generation_tps, prompt_tokens=last.prompt_tokens, prompt_tps=last.prompt_tps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="e2b")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--image", default=str(SKIMAGE_ROCKET))
    args = parser.parse_args()

    from gemma_vision.mlx_vlm import accelerate
    from mlx_vlm.prompt_utils import apply_chat_template
    from mlx_vlm.utils import load

    directory = checkpoint(Path(args.out), args.shape)
    model, processor = load(str(directory))
    text_prompt = apply_chat_template(processor, model.config, "describe the image", num_images=0)
    timed_generation(model, processor, text_prompt, [], 4)
    prompt = apply_chat_template(processor, model.config, "describe the image", num_images=1)

    stock = timed_generation(model, processor, prompt, [args.image], args.tokens)
    print(f"stock: first token after {stock['ttft']:.2f} s", file=sys.stderr, flush=True)
    started = time.perf_counter()
    acceleration = accelerate(model)
    accelerate_seconds = time.perf_counter() - started
    ours = timed_generation(model, processor, prompt, [args.image], args.tokens)
    print(f"accelerated: first token after {ours['ttft']:.2f} s", file=sys.stderr, flush=True)
    print(json.dumps(dict(shape=args.shape, image=Path(args.image).name, budget=SHAPES[args.shape]["budget"],
                          tokens=args.tokens, encoder_dtype=acceleration.encoder.dtype,
                          accelerate_seconds=accelerate_seconds, stock=stock, accelerated=ours,
                          identical_tokens=stock["tokens"] == ours["tokens"])))


if __name__ == "__main__":
    main()
