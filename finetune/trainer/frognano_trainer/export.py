"""Merge the adapter into a copy of the base model and write a folder Ollama can import.

Ollama's Go engine loads no LoRA adapters, so the served model must be the merged weights
(notes: "Getting a fine-tuned checkpoint back into Ollama"). The config is fixed and checked
here: a missing field crashes Ollama's server at create, a missing rope_theta loads silently
with the wrong RoPE base.
"""

from __future__ import annotations

import copy
import json
import os

import torch

from .config import ConfigError
from .tokenizer import write_for_ollama

# Fields Ollama v0.17.4's converter needs, by architecture written.
REQUIRED = {
    "LlamaForCausalLM": ("num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                         "hidden_size", "intermediate_size", "rope_theta", "vocab_size"),
    "Qwen3_5ForConditionalGeneration": ("num_hidden_layers", "num_attention_heads",
                                        "num_key_value_heads", "head_dim", "linear_num_key_heads",
                                        "linear_num_value_heads", "linear_key_head_dim",
                                        "linear_value_head_dim"),
}


def fix_config(cfg):
    """Returns (config, problems) for a merged model's config.json as Ollama needs it."""
    cfg = dict(cfg)
    arch = (cfg.get("architectures") or [""])[0]
    if arch == "Qwen3_5ForCausalLM":
        # transformers writes the text-only class; Ollama knows only the multimodal name
        arch = "Qwen3_5ForConditionalGeneration"
        cfg["architectures"] = [arch]
    cfg.pop("vision_config", None)  # without vision tensors it crashes at load
    rp = cfg.get("rope_parameters") or {}
    if "rope_theta" not in cfg and "rope_theta" in rp:
        cfg["rope_theta"] = rp["rope_theta"]
    problems = []
    if arch not in REQUIRED:
        problems.append(f"Ollama 0.17.4 does not convert {arch or 'an unnamed architecture'}")
    else:
        src = {**cfg, **cfg.get("text_config", {})}
        problems += [f"config.json lacks {k}" for k in REQUIRED[arch] if k not in src and k not in rp]
    return cfg, problems


def merge_export(model, path, dtype="bfloat16", tokenizer=None):
    if dtype not in ("bfloat16", "float16", "float32"):
        raise ConfigError("merge_export.dtype must be bfloat16, float16 or float32")
    merged = copy.deepcopy(model).merge_and_unload()
    merged.to(device="cpu", dtype=getattr(torch, dtype))
    # a GGUF-loaded base keeps its quantizer, and save_pretrained refuses it (notes)
    merged.hf_quantizer = None
    if hasattr(merged.config, "quantization_config"):
        del merged.config.quantization_config
    os.makedirs(path, exist_ok=True)
    merged.save_pretrained(path, safe_serialization=True)
    cp = os.path.join(path, "config.json")
    with open(cp) as f:
        cfg, problems = fix_config(json.load(f))
    with open(cp, "w") as f:
        json.dump(cfg, f, indent=2)
    if tokenizer is None:
        problems.append("no tokenizer to write (Ollama needs tokenizer.json)")
    else:
        problems += write_for_ollama(tokenizer, path)
    return {"path": path, "files": sorted(os.listdir(path)), "architecture": cfg["architectures"][0],
            "problems": problems}
