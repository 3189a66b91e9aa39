"""Validation: a wrong request is refused with a message naming the field."""

import pytest

from frognano_trainer.config import Batch, ConfigError, Load

from rollouts import rollout


def test_load_defaults():
    cfg = Load.parse({"random": {}})
    assert (cfg.lora.rank, cfg.lora.alpha, cfg.lora.target) == (16, 32.0, "all-linear")
    assert cfg.lr == 1e-5 and cfg.grpo.kl_coef == 0.0 and cfg.grpo.scale_std is False
    assert cfg.random.arch == "llama" and cfg.device == "auto"


@pytest.mark.parametrize("params, needle", [
    ({}, "exactly one of"),
    ({"model": "/x", "random": {}}, "exactly one of"),
    ({"model": ""}, "local model folder"),
    ({"random": {}, "lr": 0}, "load.lr"),
    ({"random": {}, "lr": "1e-5"}, "load.lr"),
    ({"random": {}, "learning_rate": 1e-5}, "unknown field(s) learning_rate"),
    ({"random": {}, "lora": {"rank": 0}}, "load.lora.rank"),
    ({"random": {}, "lora": {"rank": 2.5}}, "whole number"),
    ({"random": {}, "lora": {"target": "some"}}, "load.lora.target"),
    ({"random": {}, "lora": {"dropout": 1.5}}, "load.lora.dropout"),
    ({"random": {}, "grpo": {"clip_low": 0}}, "load.grpo.clip_low"),
    ({"random": {}, "grpo": {"scale_std": 1}}, "scale_std"),
    ({"random": {}, "device": "tpu"}, "load.device"),
    ({"random": {"arch": "gpt2"}}, "load.random.arch"),
    ({"random": {"hidden_size": 60, "num_attention_heads": 8}}, "multiple of num_attention_heads"),
    ({"random": {}, "gradient_checkpointing": "yes"}, "gradient_checkpointing"),
    ({"random": [], }, "must be an object"),
])
def test_load_errors(params, needle):
    with pytest.raises(ConfigError) as e:
        Load.parse(params)
    assert needle in str(e.value)


def test_batch_parses():
    b = Batch.parse({"rollouts": [rollout("g", 1), rollout("g", 0)], "minibatches": 2}, 256)
    assert len(b.rollouts) == 2 and b.minibatches == 2 and b.epochs == 1
    assert b.rollouts[0].mask[:9] == [False] * 8 + [True]


def bad(**change):
    r = rollout("g", 1)
    r.update(change)
    return r


@pytest.mark.parametrize("r, needle", [
    (bad(tokens=[1]), "at least two"),
    (bad(tokens=[1, 256] + [1] * 22), "not a token id"),
    (bad(tokens=[1, True] + [1] * 22), "not a token id"),
    (bad(mask=[0, 1]), "one entry per token"),
    (bad(mask=[1] * 24), "mask[0] must be 0"),
    (bad(mask=[0] * 24), "no assistant token"),
    (bad(mask=[0, 2] + [1] * 22), "0 or 1"),
    (bad(reward=float("nan")), "finite number"),
    (bad(reward="1"), "finite number"),
    (bad(group=None), "group"),
    (bad(extra=1), "unknown field(s) extra"),
    ({k: v for k, v in rollout("g", 1).items() if k != "reward"}, "reward is required"),
])
def test_rollout_errors(r, needle):
    with pytest.raises(ConfigError) as e:
        Batch.parse({"rollouts": [r]}, 256)
    assert needle in str(e.value) and "train.rollouts[0]" in str(e.value)


def test_batch_errors():
    with pytest.raises(ConfigError, match="non-empty list"):
        Batch.parse({"rollouts": []}, 256)
    with pytest.raises(ConfigError, match="minibatches"):
        Batch.parse({"rollouts": [rollout("g", 1)], "minibatches": 2}, 256)


@pytest.mark.parametrize("load, needle", [
    ({"model": "/m", "gguf": "/m.gguf"}, "exactly one of"),
    ({"gguf": "/m.bin"}, "load.gguf must be the path of a local .gguf file"),
    ({"random": {"preset": "frognano-9b"}}, "load.random.preset must be one of frognano-4b"),
    ({"random": {"preset": "frognano-4b", "hidden_size": 64}}, "drop hidden_size"),
    ({"random": {}, "logprob_chunk": 0}, "load.logprob_chunk must be >= 1"),
])
def test_load_sources_and_presets(load, needle):
    with pytest.raises(ConfigError) as e:
        Load.parse(load)
    assert needle in str(e.value)


def test_preset_is_the_full_size_qwen3_5():
    r = Load.parse({"random": {"preset": "frognano-4b", "seed": 2}}).random
    assert (r.arch, r.preset, r.seed) == ("qwen3_5", "frognano-4b", 2)
    assert Load.parse({"gguf": "/x/m.gguf"}).gguf == "/x/m.gguf"
