"""Merged export: the merged model computes what the adapter model computes, and its
config is what Ollama's converter needs."""

import json

import pytest
import torch

from frognano_trainer.config import Load
from frognano_trainer.export import fix_config
from frognano_trainer.model import Policy

from rollouts import batch


def test_llama_merge_matches_the_adapter_and_the_config_is_fixed(tmp_path):
    import transformers

    p = Policy(Load.parse({"random": {"arch": "llama"}, "lr": 1e-2, "device": "cpu"}))
    p.train(batch())
    out = p.merge_export(str(tmp_path / "m"), "float32")
    assert out["architecture"] == "LlamaForCausalLM" and out["problems"] == []
    assert "model.safetensors" in out["files"]
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["rope_theta"] and cfg["num_hidden_layers"] == 2
    merged = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "m"), dtype=torch.float32)
    ids = torch.tensor([[1, 5, 9, 200, 33]])
    p.model.eval()
    with torch.no_grad():
        want = p.model(input_ids=ids).logits
        got = merged(input_ids=ids).logits
    assert torch.allclose(want, got, atol=1e-4), (want - got).abs().max()
    # the policy keeps its adapter: training goes on after an export
    assert any("lora_" in n for n, _ in p.model.named_parameters())


def test_fix_config():
    cfg, problems = fix_config({"architectures": ["Qwen3_5ForCausalLM"], "vision_config": {},
                                "rope_parameters": {"rope_theta": 1e7}, "num_hidden_layers": 2})
    assert cfg["architectures"] == ["Qwen3_5ForConditionalGeneration"] and "vision_config" not in cfg
    assert cfg["rope_theta"] == 1e7
    assert "config.json lacks num_attention_heads" in problems
    _, problems = fix_config({"architectures": ["Qwen3ForCausalLM"]})
    assert problems == ["Ollama 0.17.4 does not convert Qwen3ForCausalLM"]


def test_bad_dtype(tmp_path):
    from frognano_trainer.config import ConfigError

    p = Policy(Load.parse({"random": {}, "device": "cpu"}))
    with pytest.raises(ConfigError):
        p.merge_export(str(tmp_path), "int8")
