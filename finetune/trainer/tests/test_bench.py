"""The GPU check's script, run here in its mini mode (tiny model, CPU), and its FLOPs count."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from frognano_trainer.bench import flops_per_token

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_flops_per_token_by_hand():
    # one full-attention layer of 2 heads of 4, 100 linear weights, 8 tokens:
    # attention 4 * (8/2) * 2 * 4 = 128, linear 2 * 100 = 200, forward 328;
    # old-policy forward + training forward + backward (200 + 2 * 128) = 1112; recompute +328
    cfg = SimpleNamespace(layer_types=["full_attention", "linear_attention"], head_dim=4,
                          num_attention_heads=2, hidden_size=8, num_hidden_layers=2)
    assert flops_per_token(cfg, 100, 8) == (1112, 1440)


def test_gpu_check_runs_in_mini_mode(tmp_path):
    env = dict(os.environ, FROGNANO_TRAINER_PYTHON=sys.executable, OMP_NUM_THREADS="1")
    env.pop("OUT", None)
    r = subprocess.run(["bash", os.path.join(HERE, "gpu-check.sh"), "--mini", "--device", "cpu", "--e2e", "single",
                        "--steps", "1", "--warmup", "1", "--out", str(tmp_path)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((tmp_path / "report.json").read_text())
    tp = rep["throughput"]
    assert rep["mini"] and rep["device"] == "cpu"
    assert [s["warmup"] for s in tp["steps"]] == [True, False]
    assert tp["tokens_per_s"] > 0 and tp["step_s"] > 0 and tp["describe"]["gradient_checkpointing"]
    assert tp["breakdown_s"]["total"] > 0 and "Gated DeltaNet (linear attention)" in tp["breakdown_s"]
    [e2e] = rep["end_to_end"]
    assert e2e["ok"], e2e
    assert e2e["calls"] == ["hello", "load", "train", "train", "logprobs", "save", "merge_export", "metrics", "shutdown"]
    md = (tmp_path / "report.md").read_text()
    assert "tokens/s" in md and "What limits it" in md and "single (1 process): ok" in md
    assert md in r.stdout
