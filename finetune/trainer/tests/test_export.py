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

    p = Policy(Load.parse({"random": {"arch": "llama", "vocab_size": 320}, "lr": 1e-2, "device": "cpu"}))
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


def test_export_writes_a_tokenizer_ollama_reads(tmp_path):
    p = Policy(Load.parse({"random": {"arch": "llama", "vocab_size": 320}, "device": "cpu"}))
    out = p.merge_export(str(tmp_path / "m"), "float16")
    assert out["problems"] == [], out
    assert {"tokenizer.json", "tokenizer_config.json", "model.safetensors"} <= set(out["files"])
    tc = json.loads((tmp_path / "m" / "tokenizer_config.json").read_text())
    assert "<|im_start|>" in tc["chat_template"] and tc["eos_token"] == "<|im_end|>"
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["eos_token_id"] == 258 and cfg["bos_token_id"] is None


def test_export_without_a_tokenizer_says_so(tmp_path):
    p = Policy(Load.parse({"random": {}, "device": "cpu"}))  # 256 tokens: too few for one
    out = p.merge_export(str(tmp_path / "m"), "float32")
    assert out["problems"] == ["no tokenizer to write (Ollama needs tokenizer.json)"]


def test_byte_tokenizer():
    from frognano_trainer.config import ConfigError
    from frognano_trainer.tokenizer import MIN_VOCAB, byte_tokenizer, token_bytes

    t = byte_tokenizer(300)
    assert len(t) == 300
    ids = t("the é")["input_ids"]
    assert ids == [259, 101, 32, 195, 169]  # "th" merged, then one token per byte
    assert [bytes(token_bytes(t, i)) for i in ids] == [b"th", b"e", b" ", b"\xc3", b"\xa9"]
    with pytest.raises(ConfigError):
        byte_tokenizer(MIN_VOCAB - 1)


def test_logprobs():
    from frognano_trainer.config import ConfigError

    p = Policy(Load.parse({"random": {"arch": "llama", "vocab_size": 320, "initializer_range": 0.2},
                           "device": "cpu"}))
    a = p.next_token_logprobs({"text": "hi there", "top_k": 3})
    b = p.next_token_logprobs({"tokens": a["tokens"], "top_k": 3})
    assert a == b and len(a["top"]) == 3
    lps = [e["logprob"] for e in a["top"]]
    assert lps == sorted(lps, reverse=True) and all(x < 0 for x in lps)
    c = p.next_token_logprobs({"messages": [{"role": "user", "content": "hi"}]})
    assert c["tokens"][0] == 257 and c["tokens"][-1] == 10 and len(c["top"]) == 5
    for bad in ({}, {"text": "x", "tokens": [1]}, {"tokens": [320]}, {"text": "x", "top_k": 0}, {"text": "x", "k": 1}):
        with pytest.raises(ConfigError):
            p.next_token_logprobs(bad)
    q = Policy(Load.parse({"random": {}, "device": "cpu"}))
    with pytest.raises(ConfigError, match="no tokenizer"):
        q.next_token_logprobs({"text": "x"})
