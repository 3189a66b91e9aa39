"""The trainer under torchrun: two gloo ranks on the CPU, driven over the protocol.

Each test starts `python -m torch.distributed.run --nproc_per_node=2 -m frognano_trainer
--distributed MODE` exactly as the Go side does (trainer.Options.Procs), so what is proven is
the real launcher, the real process group and the real DDP/FSDP wrappers.
"""

import json
import os
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file

from frognano_trainer.config import Load
from frognano_trainer.model import Policy

from rollouts import rollout

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Ranks:
    """A torchrun-launched trainer; rank 0's stdout is the protocol."""

    def __init__(self, mode, procs=2, env=None):
        e = dict(os.environ, PYTHONPATH=HERE, OMP_NUM_THREADS="1", **(env or {}))
        e.pop("FROGNANO_TRAINER_FAULT", None) if not env or "FROGNANO_TRAINER_FAULT" not in env else None
        self.p = subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={procs}",
             "-m", "frognano_trainer", "--distributed", mode],
            cwd=HERE, env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True)
        self.n = 0

    def call(self, method, params=None, timeout=300):
        self.n += 1
        req = {"id": self.n, "method": method, "params": params or {}}
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()  # bounded by the pytest-level timeout of close()
        assert line, "the trainer closed stdout; stderr:\n" + self.stderr()
        resp = json.loads(line)
        assert resp["id"] == self.n
        return resp

    def stderr(self):
        try:
            self.p.kill()
        except OSError:
            pass
        return self.p.stderr.read()[-4000:]

    def close(self):
        if self.p.poll() is None:
            os.killpg(self.p.pid, 9)
        self.p.wait()


def two_rank_batch():
    """Three groups that teach (uneven sizes: the ranks get different numbers of sequences,
    so the padding passes run) and one that is skipped."""
    rs = [rollout("a", r, seed=i) for i, r in enumerate([1, 0, 1, 0])]
    rs += [rollout("b", r, n=30, seed=20 + i) for i, r in enumerate([0.5, 0, 1])]
    rs += [rollout("c", r, n=20, seed=30 + i) for i, r in enumerate([1, 0])]
    rs += [rollout("same", 1, seed=40 + i) for i in range(2)]
    return {"rollouts": rs, "minibatches": 2, "epochs": 2}


LOAD = {"random": {"arch": "llama", "seed": 3}, "lr": 2e-2, "device": "cpu", "seed": 5}


def single_process(tmp_path):
    p = Policy(Load.parse(LOAD))
    r = p.train(two_rank_batch())
    p.save(str(tmp_path / "single"))
    return r, load_file(str(tmp_path / "single" / "adapter_model.safetensors"))


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_ranks_train_like_one_process(mode, tmp_path):
    t = Ranks(mode)
    try:
        h = t.call("hello")["result"]
        assert h["distributed"] == mode and h["world_size"] == 2
        loaded = t.call("load", LOAD)["result"]
        assert loaded["world_size"] == 2
        got = t.call("train", two_rank_batch())
        assert "result" in got, got
        got = got["result"]
        m = t.call("metrics", {"adapter_digest": True})["result"]
        saved = t.call("save", {"path": str(tmp_path / "ranks")})["result"]
        assert "adapter_model.safetensors" in saved["files"]
        assert t.call("shutdown")["result"] == {}
        assert t.p.wait(timeout=60) == 0, t.stderr()
    finally:
        t.close()
    if mode == "ddp":
        # DDP: every rank holds the whole adapter, and they are bit-identical
        d = m["adapter_digests"]
        assert len(d) == 2 and d[0] == d[1], d
    want, want_w = single_process(tmp_path)
    for k in ("steps", "tokens", "sequences", "skipped_groups"):
        assert got[k] == want[k], k
    assert got["steps"] == 4
    # the loss and the gradient norm (before clipping) are scale-sensitive where Adam's
    # update is not: a wrong normalisation across ranks shows here
    assert got["loss"] == pytest.approx(want["loss"], rel=1e-4, abs=1e-6)
    assert got["grad_norm"] == pytest.approx(want["grad_norm"], rel=1e-4)
    assert got["clip_fraction"] == pytest.approx(want["clip_fraction"])
    got_w = load_file(str(tmp_path / "ranks" / "adapter_model.safetensors"))
    assert got_w.keys() == want_w.keys()
    moved = 0
    for k, v in want_w.items():
        assert torch.allclose(got_w[k], v, atol=1e-5, rtol=1e-4), (k, (got_w[k] - v).abs().max())
        moved += int(not torch.equal(v, torch.zeros_like(v)) and "lora_B" in k)
    assert moved, "no lora_B moved away from zero: the comparison proved nothing"


@pytest.mark.parametrize("how", ["raise", "exit"])
def test_a_failing_rank_is_an_error_not_a_hang(how, tmp_path):
    fault = "train:1" + (":exit" if how == "exit" else "")
    t = Ranks("ddp", env={"FROGNANO_TRAINER_FAULT": fault})
    try:
        assert "result" in t.call("load", LOAD)
        start = time.monotonic()
        e = t.call("train", two_rank_batch())
        assert "error" in e, e
        assert e["error"]["code"] == "internal", e
        # the trainer ends after such an error: a rank may have been left in a collective
        assert t.p.wait(timeout=120) != 0
        assert time.monotonic() - start < 120
    finally:
        t.close()
