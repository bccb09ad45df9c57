"""Small random Gemma 4 checkpoints (language model and vision) that mlx-vlm loads as it loads a
published one, built in the test with mlx-vlm's own model classes: config.json, seeded random
weights under their sanitized names (the projector, and for gemma4_unified `patch_dense`,
quantized by MLX's `nn.quantize` when asked, with the config's `quantization` section, as
converters write them), processor_config.json (image and video processors) and a word-level
tokenizer made with the `tokenizers` package, with Gemma's special tokens and a chat template.
Nothing is downloaded.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten
from mlx_vlm.models.gemma4 import config as gemma4_config
from mlx_vlm.models.gemma4 import gemma4
from mlx_vlm.models.gemma4_unified import config as unified_config
from mlx_vlm.models.gemma4_unified import gemma4_unified as unified

# Token ids: the special tokens first, then words.
SPECIAL = ["<pad>", "<eos>", "<bos>", "<unk>", "<|image|>", "<|video|>", "<start_of_image>", "<end_of_image>",
           "<|audio|>", "<start_of_audio>", "<end_of_audio>", "<start_of_turn>", "<end_of_turn>"]
WORDS = ["user", "model", "describe", "the", "image", "video", "and", "a", "cat", "dog", "red", "blue", "green",
         "big", "small", "is", "on", "in", "of", "it", "this", "that", "what", "see", "two", "one", "frames",
         "picture", "shows", "color", "here", "there", "yes", "no", "very", "an", "with", "at", "by", "to",
         "from", "up", "down", "left", "right", "sky", "sea", "tree", "car", "house", "light", "dark", "sun",
         "moon", "star", "road", "hill", "field", "rock", "wave", "bird", "fish", ".", ",", "?", "!", "\n"]
VOCAB = SPECIAL + WORDS
IDS = {token: i for i, token in enumerate(VOCAB)}
IMAGE_TOKEN, VIDEO_TOKEN = IDS["<|image|>"], IDS["<|video|>"]
BOI, EOI = IDS["<start_of_image>"], IDS["<end_of_image>"]

TEXT = dict(hidden_size=64, num_hidden_layers=2, intermediate_size=128, num_attention_heads=2,
            num_key_value_heads=1, num_global_key_value_heads=1, head_dim=32, global_head_dim=32,
            vocab_size=len(VOCAB), vocab_size_per_layer_input=len(VOCAB), hidden_size_per_layer_input=0,
            num_kv_shared_layers=0, sliding_window=64, sliding_window_pattern=2, enable_moe_block=False,
            final_logit_softcapping=30.0)
GEMMA4_VISION = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=2, head_dim=32, use_clipped_linears=True, standardize=True,
                     patch_size=4, position_embedding_size=64, pooling_kernel_size=3)
# mlx-vlm's `load` gives gemma4_unified the image processor's defaults (16-pixel patches pooled
# 3×3, 280 soft tokens) whatever processor_config.json says, so the tiny embedder keeps them.
UNIFIED_VISION = dict(patch_size=16, pooling_kernel_size=3, model_patch_size=48, mm_embed_dim=64, mm_posemb_size=1120,
                      output_proj_dims=64, num_soft_tokens=280)
UNIFIED_AUDIO = dict(model_type="gemma4_unified_audio", audio_embed_dim=64, hidden_size=64, output_proj_dims=64)
# The budget per image of the image processor; videos take the video processor's (70).
IMAGE_BUDGET = {"gemma4": 16, "gemma4_unified": 280}

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<|image|>"
    "{% elif item['type'] == 'video' %}<|video|>{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def model_config(family: str, vision: dict | None = None, quantization: dict | None = None,
                 text: dict | None = None) -> dict:
    """config.json of a tiny `family` model (vision and text settings merged over the defaults
    above)."""
    gemma = family == "gemma4"
    config = dict(
        model_type=family,
        text_config=dict(TEXT, **(text or {}), model_type="gemma4_text" if gemma else "gemma4_unified_text"),
        vision_config=dict(GEMMA4_VISION if gemma else UNIFIED_VISION, **(vision or {}),
                           model_type="gemma4_vision" if gemma else "gemma4_unified_vision"),
        vocab_size=len(VOCAB), image_token_id=IMAGE_TOKEN, video_token_id=VIDEO_TOKEN, boi_token_id=BOI,
        eoi_token_id=EOI, audio_token_id=IDS["<|audio|>"], boa_token_id=IDS["<start_of_audio>"],
        eoa_token_id=IDS["<end_of_audio>"], eos_token_id=[IDS["<eos>"], IDS["<end_of_turn>"]], pad_token_id=0)
    # gemma4 without audio (null, so that mlx-vlm builds none); gemma4_unified always has one.
    config["audio_config"] = None if gemma else dict(UNIFIED_AUDIO)
    if quantization:
        config["quantization"] = dict(quantization)
        config["quantization_config"] = dict(quantization)
    return config


def build_model(config: dict) -> nn.Module:
    """mlx-vlm's own Model for `config` (as checkpoints.py of the parity suite builds it)."""
    if config["model_type"] == "gemma4":
        cfg = gemma4_config.ModelConfig.from_dict(config)
        cfg.vision_config = gemma4_config.VisionConfig.from_dict(config["vision_config"])
        cfg.text_config = gemma4_config.TextConfig.from_dict(config["text_config"])
        return gemma4.Model(cfg)
    return unified.Model(unified_config.ModelConfig.from_dict(config))


def random_parameters(model: nn.Module, dtype: mx.Dtype, seed: int) -> dict:
    """Seeded values of every parameter's name and shape: norm scales near 1, clip bounds
    around ±1.5, position tables of 0.5, token embeddings of 0.05, projections scaled by
    1/√fan-in."""
    named = sorted(tree_flatten(model.parameters()))
    keys = mx.random.split(mx.random.key(seed), len(named))
    out = {}
    for (name, value), k in zip(named, keys):
        leaf = name.rsplit(".", 1)[-1]
        owner = name.rsplit(".", 2)[-2] if name.count(".") else ""
        if leaf in ("input_min", "output_min"):
            w = mx.full(value.shape, -1.5 - float(mx.random.uniform(key=k)))
        elif leaf in ("input_max", "output_max"):
            w = mx.full(value.shape, 1.5 + float(mx.random.uniform(key=k)))
        elif "norm" in owner or "_ln" in owner or leaf in ("std_scale", "layer_scalar"):
            w = (0.1 if leaf == "bias" else 1.0) + 0.25 * mx.random.normal(value.shape, key=k)
        elif leaf in ("bias", "std_bias"):
            w = 0.1 * mx.random.normal(value.shape, key=k)
        elif "position_embedding_table" in name or "pos_embedding" in name:
            w = 0.5 * mx.random.normal(value.shape, key=k)
        elif "embed_tokens" in name:
            # Small next to what the layers add, so that the greedy tokens follow the context.
            w = 0.05 * mx.random.normal(value.shape, key=k)
        else:
            fan_in = value.shape[-1] if value.ndim else 1
            w = mx.random.normal(value.shape, key=k) / math.sqrt(fan_in)
        out[name] = w.astype(dtype if mx.issubdtype(value.dtype, mx.floating) else value.dtype)
    return out


def write_checkpoint(directory: Path, family: str, *, seed: int = 0, quantize: bool = False,
                     vision: dict | None = None, text: dict | None = None, budget: int | None = None,
                     dtype: mx.Dtype = mx.bfloat16) -> Path:
    """A loadable `family` checkpoint in `directory`: tiny unless `vision` / `text` say otherwise,
    the image processor at `budget` (default: the family's in IMAGE_BUDGET). With `quantize`, the
    projector (and for gemma4_unified `patch_dense`) is a 4-bit affine `nn.QuantizedLinear`,
    group 64."""
    directory.mkdir(parents=True, exist_ok=True)
    quantization = dict(group_size=64, bits=4, mode="affine") if quantize else None
    config = model_config(family, vision, quantization, text)
    model = build_model(config)
    model.load_weights(list(random_parameters(model, dtype, seed).items()))
    if quantize:
        chosen = {"embed_vision.embedding_projection", "vision_embedder.patch_dense"}
        nn.quantize(model, group_size=64, bits=4, class_predicate=lambda path, _module: path in chosen)
    parameters = dict(tree_flatten(model.parameters()))
    mx.eval(list(parameters.values()))
    mx.save_safetensors(str(directory / "model.safetensors"), parameters)
    (directory / "config.json").write_text(json.dumps(config, indent=1))
    write_processor_files(directory, config, budget or IMAGE_BUDGET[family])
    return directory


def write_processor_files(directory: Path, config: dict, budget: int) -> None:
    """processor_config.json (the image processor at `budget`, the video processor at 70 soft
    tokens per frame, 4 frames at most), the tokenizer and the chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    family, vision = config["model_type"], config["vision_config"]
    patch = dict(patch_size=vision["patch_size"], pooling_kernel_size=vision["pooling_kernel_size"])
    image_processor = dict(image_processor_type="Gemma4ImageProcessor", do_rescale=True, rescale_factor=1 / 255,
                           do_normalize=False, max_soft_tokens=budget, **patch)
    video_processor = dict(max_soft_tokens=70, num_frames=4, **patch)
    if family == "gemma4_unified":
        video_processor["model_patch_size"] = vision["model_patch_size"]
    processor = dict(image_processor=image_processor, video_processor=video_processor, image_seq_length=budget)
    (directory / "processor_config.json").write_text(json.dumps(processor, indent=1))

    tokenizer = Tokenizer(models.WordLevel(vocab=IDS, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tokenizer.add_special_tokens(SPECIAL)
    tokenizer.save(str(directory / "tokenizer.json"))
    tokenizer_config = dict(
        tokenizer_class="PreTrainedTokenizerFast", bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        unk_token="<unk>", add_bos_token=False, model_max_length=4096, chat_template=CHAT_TEMPLATE,
        extra_special_tokens=dict(image_token="<|image|>", video_token="<|video|>", boi_token="<start_of_image>",
                                  eoi_token="<end_of_image>", audio_token="<|audio|>", boa_token="<start_of_audio>",
                                  eoa_token="<end_of_audio>"))
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=1))
    (directory / "special_tokens_map.json").write_text(json.dumps(
        dict(bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"), indent=1))
    (directory / "chat_template.jinja").write_text(CHAT_TEMPLATE)
