"""Validated settings of a load request and of a batch of rollouts.

Every request is checked here before a tensor is touched, so that a mistake in the Go side
comes back as a message naming the field, not as a stack trace from deep inside torch.
Unknown fields are errors: a misspelt setting must not silently fall back to its default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

RANDOM_ARCHS = ("llama", "qwen3", "qwen3_5")
# Full-size configs for random-initialised benchmarks (model.random_config builds them).
# frognano-4b: Qwen3.5-4B's text model, which FrogNano fine-tunes: 32 layers of 2560, three
# Gated DeltaNet layers to one of gated full attention, 16 query / 4 key-value heads of 256
# (a quarter of each rotated, base 1e7), a 248,320-token vocabulary, tied embeddings.
PRESETS = {
    "frognano-4b": dict(arch="qwen3_5", vocab_size=248320, hidden_size=2560, intermediate_size=9216,
                        num_hidden_layers=32, num_attention_heads=16, num_key_value_heads=4, head_dim=256,
                        linear_num_key_heads=16, linear_num_value_heads=32, linear_key_head_dim=128,
                        linear_value_head_dim=128, linear_conv_kernel_dim=4, tie_word_embeddings=True,
                        max_position_embeddings=262144,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                         "partial_rotary_factor": 0.25}),
}
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16")


class ConfigError(ValueError):
    """A request's parameters are wrong; the message says which and why."""


def _take(d, where, allowed):
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise ConfigError(f"{where} must be an object")
    extra = sorted(set(d) - set(allowed))
    if extra:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(extra)}; known: {', '.join(sorted(allowed))}")
    return d


def _num(d, key, default, where, lo=None, hi=None, lo_open=False, integer=False):
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where}.{key} must be a finite number, not {v!r}")
    if integer and int(v) != v:
        raise ConfigError(f"{where}.{key} must be a whole number, not {v!r}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ConfigError(f"{where}.{key} must be {'>' if lo_open else '>='} {lo}, not {v!r}")
    if hi is not None and v > hi:
        raise ConfigError(f"{where}.{key} must be <= {hi}, not {v!r}")
    return int(v) if integer else float(v)


def _choice(d, key, default, choices, where):
    v = d.get(key, default)
    if v not in choices:
        raise ConfigError(f"{where}.{key} must be one of {', '.join(map(str, choices))}, not {v!r}")
    return v


@dataclass
class LoRA:
    # Rank 1-32 on all linear layers is enough for RL (notes: "RL with LoRA"); alpha = 2 rank
    # is peft's common choice. Dropout 0: it would make the recomputed old log probabilities
    # differ from the ones the update sees.
    rank: int = 16
    alpha: float = 32.0
    dropout: float = 0.0
    target: object = "all-linear"

    @classmethod
    def parse(cls, d):
        w = "load.lora"
        d = _take(d, w, ("rank", "alpha", "dropout", "target"))
        target = d.get("target", "all-linear")
        if target != "all-linear" and not (
            isinstance(target, list) and target and all(isinstance(t, str) and t for t in target)
        ):
            raise ConfigError(f'{w}.target must be "all-linear" or a list of module names')
        return cls(
            rank=_num(d, "rank", 16, w, lo=1, hi=1024, integer=True),
            alpha=_num(d, "alpha", 32.0, w, lo=0, lo_open=True),
            dropout=_num(d, "dropout", 0.0, w, lo=0, hi=0.9),
            target=target,
        )


@dataclass
class GRPO:
    clip_low: float = 0.2
    clip_high: float = 0.2
    scale_std: bool = False
    kl_coef: float = 0.0  # the FrogNano report (second-hand) used no KL term
    max_grad_norm: float = 1.0

    @classmethod
    def parse(cls, d):
        w = "load.grpo"
        d = _take(d, w, ("clip_low", "clip_high", "scale_std", "kl_coef", "max_grad_norm"))
        scale_std = d.get("scale_std", False)
        if not isinstance(scale_std, bool):
            raise ConfigError(f"{w}.scale_std must be true or false")
        return cls(
            clip_low=_num(d, "clip_low", 0.2, w, lo=0, hi=1, lo_open=True),
            clip_high=_num(d, "clip_high", 0.2, w, lo=0, lo_open=True),
            scale_std=scale_std,
            kl_coef=_num(d, "kl_coef", 0.0, w, lo=0),
            max_grad_norm=_num(d, "max_grad_norm", 1.0, w, lo=0, lo_open=True),
        )


@dataclass
class RandomModel:
    """A tiny random-initialised model, for tests: nothing is ever downloaded."""

    arch: str = "llama"
    seed: int = 0
    vocab_size: int = 256
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    # the weights' init std; None keeps transformers' (0.02), which makes next-token
    # distributions nearly flat: an export check wants sharper ones
    initializer_range: float | None = None
    # a named full-size config instead of the sizes (PRESETS): the GPU check's random
    # FrogNano-sized model
    preset: str | None = None
    # generate only printable ASCII, newlines and <|im_end|> (tokenizer.text_only_output):
    # for tests whose rollouts must be text that Ollama reports exactly
    text_output: bool = False

    @classmethod
    def parse(cls, d):
        w = "load.random"
        fields = ("arch", "seed", "vocab_size", "hidden_size", "intermediate_size",
                  "num_hidden_layers", "num_attention_heads", "num_key_value_heads")
        d = _take(d, w, fields + ("initializer_range", "preset", "text_output"))
        text_output = d.get("text_output", False)
        if not isinstance(text_output, bool):
            raise ConfigError(f"{w}.text_output must be true or false")
        if "preset" in d:
            if d["preset"] not in PRESETS:
                raise ConfigError(f"{w}.preset must be one of {', '.join(PRESETS)}, not {d['preset']!r}")
            sized = sorted(set(d) - {"preset", "seed", "initializer_range"})
            if sized:
                raise ConfigError(f"{w}.preset fixes the architecture and sizes: drop {', '.join(sized)}")
            init = _num(d, "initializer_range", 0.02, w, lo=0, hi=10, lo_open=True) if "initializer_range" in d else None
            return cls(arch=PRESETS[d["preset"]]["arch"], seed=_num(d, "seed", 0, w, lo=0, integer=True),
                       initializer_range=init, preset=d["preset"])
        init = None
        if "initializer_range" in d:
            init = _num(d, "initializer_range", None, w, lo=0, hi=10, lo_open=True)
        ints = {k: _num(d, k, getattr(cls, k), w, lo=1, integer=True) for k in fields[2:]}
        if ints["hidden_size"] % ints["num_attention_heads"]:
            raise ConfigError(f"{w}.hidden_size must be a multiple of num_attention_heads")
        if ints["num_attention_heads"] % ints["num_key_value_heads"]:
            raise ConfigError(f"{w}.num_attention_heads must be a multiple of num_key_value_heads")
        return cls(arch=_choice(d, "arch", "llama", RANDOM_ARCHS, w),
                   seed=_num(d, "seed", 0, w, lo=0, integer=True), initializer_range=init,
                   text_output=text_output, **ints)


@dataclass
class Load:
    model: str | None = None
    random: RandomModel | None = None
    gguf: str | None = None  # a GGUF file, dequantised by transformers (e.g. SmolLM2's)
    lora: LoRA = field(default_factory=LoRA)
    grpo: GRPO = field(default_factory=GRPO)
    # About 10x a full fine-tune's RL learning rate (notes: "RL with LoRA").
    lr: float = 1e-5
    weight_decay: float = 0.0
    device: str = "auto"
    dtype: str = "auto"
    gradient_checkpointing: object = "auto"
    seed: int = 0
    # positions per chunk of the LM head (grpo.chunked_token_logprobs): 1,024 positions of a
    # 248k vocabulary are 1 GB of float32 logits
    logprob_chunk: int = 1024

    @classmethod
    def parse(cls, d):
        w = "load"
        d = _take(d, w, ("model", "random", "gguf", "lr", "lora", "grpo", "weight_decay", "device",
                         "dtype", "gradient_checkpointing", "seed", "logprob_chunk"))
        model, random, gguf = d.get("model"), d.get("random"), d.get("gguf")
        if sum(x is not None for x in (model, random, gguf)) != 1:
            raise ConfigError('load needs exactly one of "model" (a local folder), "gguf" (a local GGUF file) '
                              'and "random" (a tiny test config)')
        if model is not None and (not isinstance(model, str) or not model):
            raise ConfigError("load.model must be the path of a local model folder")
        if gguf is not None and (not isinstance(gguf, str) or not gguf.endswith(".gguf")):
            raise ConfigError("load.gguf must be the path of a local .gguf file")
        gc = d.get("gradient_checkpointing", "auto")
        if gc not in ("auto", True, False):
            raise ConfigError('load.gradient_checkpointing must be "auto", true or false')
        return cls(
            model=model,
            gguf=gguf,
            random=RandomModel.parse(random) if random is not None else None,
            lora=LoRA.parse(d.get("lora")),
            grpo=GRPO.parse(d.get("grpo")),
            lr=_num(d, "lr", 1e-5, w, lo=0, hi=1, lo_open=True),
            weight_decay=_num(d, "weight_decay", 0.0, w, lo=0),
            device=_choice(d, "device", "auto", DEVICES, w),
            dtype=_choice(d, "dtype", "auto", DTYPES, w),
            gradient_checkpointing=gc,
            seed=_num(d, "seed", 0, w, lo=0, integer=True),
            logprob_chunk=_num(d, "logprob_chunk", 1024, w, lo=1, integer=True),
        )


@dataclass
class Rollout:
    tokens: list
    mask: list
    reward: float
    group: object


@dataclass
class Batch:
    rollouts: list
    minibatches: int = 1
    epochs: int = 1

    @classmethod
    def parse(cls, d, vocab_size):
        w = "train"
        d = _take(d, w, ("rollouts", "minibatches", "epochs"))
        rs = d.get("rollouts")
        if not isinstance(rs, list) or not rs:
            raise ConfigError("train.rollouts must be a non-empty list")
        out = [_rollout(r, f"train.rollouts[{i}]", vocab_size) for i, r in enumerate(rs)]
        return cls(
            rollouts=out,
            # Several minibatches or epochs make later updates off-policy: that is what the
            # clipped ratio against the recomputed old log probabilities is for.
            minibatches=_num(d, "minibatches", 1, w, lo=1, hi=len(rs), integer=True),
            epochs=_num(d, "epochs", 1, w, lo=1, hi=16, integer=True),
        )


def _rollout(r, w, vocab_size):
    r = _take(r, w, ("tokens", "mask", "reward", "group"))
    tokens, mask, group = r.get("tokens"), r.get("mask"), r.get("group")
    if not isinstance(tokens, list) or len(tokens) < 2:
        raise ConfigError(f"{w}.tokens must list at least two token ids")
    for t in tokens:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab_size:
            raise ConfigError(f"{w}.tokens: {t!r} is not a token id of this model (vocabulary {vocab_size})")
    if not isinstance(mask, list) or len(mask) != len(tokens):
        raise ConfigError(f"{w}.mask must have one entry per token ({len(tokens)})")
    if any(m not in (0, 1) or isinstance(m, float) for m in mask):
        raise ConfigError(f"{w}.mask entries must be 0 or 1")
    if mask[0]:
        raise ConfigError(f"{w}.mask[0] must be 0: nothing predicts the first token")
    if not any(mask):
        raise ConfigError(f"{w}.mask marks no assistant token")
    if not isinstance(group, (str, int)) or isinstance(group, bool):
        raise ConfigError(f"{w}.group must be a string or an integer")
    reward = _num(r, "reward", None, w) if "reward" in r else None
    if reward is None:
        raise ConfigError(f"{w}.reward is required")
    return Rollout(tokens=tokens, mask=[bool(m) for m in mask], reward=reward, group=group)
