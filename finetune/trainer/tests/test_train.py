"""CPU training on tiny random models of the architectures the trainer serves."""

import math
import os

import pytest
import torch

from frognano_trainer.config import Load
from frognano_trainer.model import Policy

from rollouts import batch


def lora_state(p):
    return {n: t.detach().clone() for n, t in p.model.named_parameters() if "lora_" in n}


def base_state(p):
    return {n: t.detach().clone() for n, t in p.model.named_parameters() if "lora_" not in n}


@pytest.mark.parametrize("arch", ["llama", "qwen3", "qwen3_5"])
def test_a_step_changes_only_the_adapter(arch):
    p = Policy(Load.parse({"random": {"arch": arch}, "lr": 1e-3, "device": "cpu"}))
    d = p.describe()
    assert d["device"] == "cpu" and d["dtype"] == "float32"
    assert 0 < d["trainable"] < d["parameters"]
    lora0, base0 = lora_state(p), base_state(p)
    # every linear layer carries an adapter: attention and MLP alike
    for proj in ("q_proj", "down_proj") + (("in_proj_qkv",) if arch == "qwen3_5" else ()):
        assert any(proj in n for n in lora0), proj
    r = p.train(batch())
    assert r["skipped_groups"] == ["always-solved"]
    assert r["sequences"] == 4 and r["steps"] == 1
    assert r["tokens"] == 4 * 12  # 6 + 6 assistant tokens each
    assert math.isfinite(r["loss"]) and r["grad_norm"] > 0
    changed = [n for n, t in lora_state(p).items() if not torch.equal(t, lora0[n])]
    assert changed, "no adapter weight moved"
    assert all(torch.equal(t, base0[n]) for n, t in base_state(p).items()), "a base weight moved"


def test_later_updates_are_off_policy_and_clipped():
    p = Policy(Load.parse({"random": {}, "lr": 5e-2, "device": "cpu"}))
    b = batch(epochs=3)
    b["rollouts"] += [dict(r, group="second") for r in b["rollouts"][:4]]
    r = p.train(dict(b, minibatches=2))
    assert r["steps"] == 6
    # the first update is on-policy (ratio 1); a large learning rate moves the later ones
    # past the clip range
    assert 0 < r["clip_fraction"] < 1


def test_all_groups_skipped_is_not_a_step():
    p = Policy(Load.parse({"random": {}, "device": "cpu"}))
    b = batch()
    b["rollouts"] = b["rollouts"][4:]
    r = p.train(b)
    assert r["steps"] == 0 and r["loss"] is None and r["skipped_groups"] == ["always-solved"]


def test_kl_needs_the_reference_and_stays_finite():
    p = Policy(Load.parse({"random": {}, "device": "cpu", "lr": 1e-2, "grpo": {"kl_coef": 0.1}}))
    for _ in range(2):
        r = p.train(batch())
        assert math.isfinite(r["loss"])


def test_save_writes_the_adapter(tmp_path):
    p = Policy(Load.parse({"random": {}, "device": "cpu"}))
    out = p.save(str(tmp_path / "adapter"))
    assert "adapter_model.safetensors" in out["files"] and "adapter_config.json" in out["files"]
    assert os.path.getsize(tmp_path / "adapter" / "adapter_model.safetensors") > 0


def test_chunked_lm_head_trains_like_the_whole_one():
    def run(chunk):
        p = Policy(Load.parse({"random": {"arch": "qwen3_5"}, "lr": 1e-2, "device": "cpu",
                               "logprob_chunk": chunk, "gradient_checkpointing": True}))
        return p.train(batch(epochs=2)), lora_state(p)

    (a, wa), (b, wb) = run(5), run(1024)  # 24-token rollouts: 5 chunks, or one
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
    assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-5)
    # Adam divides each gradient by its own running size, so summation-order noise in a
    # near-zero component can move that one weight by up to ~lr; compare the adapter as a
    # whole (a wrong chunking differs by order 1, float noise by ~1e-6)
    diff = math.sqrt(sum(float(((wa[n] - wb[n]) ** 2).sum()) for n in wa))
    size = math.sqrt(sum(float((wa[n] ** 2).sum()) for n in wa))
    assert diff / size < 1e-4, diff / size
