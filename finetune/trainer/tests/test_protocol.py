"""The real trainer process, driven over its pipes as the Go side drives it."""

import json
import os
import subprocess
import sys

import pytest

from rollouts import batch

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Trainer:
    def __init__(self):
        env = dict(os.environ, PYTHONPATH=HERE)
        self.p = subprocess.Popen([sys.executable, "-m", "frognano_trainer"], cwd=HERE, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        self.n = 0

    def raw(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline()
        assert out, "the trainer closed stdout; stderr: " + self.p.stderr.read()
        return json.loads(out)  # every stdout line is a protocol line

    def call(self, method, params=None):
        self.n += 1
        req = {"id": self.n, "method": method}
        if params is not None:
            req["params"] = params
        resp = self.raw(json.dumps(req))
        assert resp["id"] == self.n
        return resp


@pytest.fixture(scope="module")
def trainer():
    t = Trainer()
    yield t
    if t.p.poll() is None:
        t.p.kill()
    t.p.wait()


def test_hello(trainer):
    r = trainer.call("hello")["result"]
    assert r["protocol"] == 1
    assert r["device"] in ("cpu", "cuda")
    assert r["dtype"] in ("float32", "bfloat16")
    for k in ("python", "torch", "transformers", "peft", "cuda_available"):
        assert k in r


@pytest.mark.parametrize("line, code", [
    ("this is not json", "bad_request"),
    ("[1, 2]", "bad_request"),
    ('{"id": 5}', "bad_request"),
    ('{"id": 5, "method": "load", "params": [1]}', "bad_request"),
])
def test_malformed_lines_are_answered(trainer, line, code):
    r = trainer.raw(line)
    assert r["error"]["code"] == code and r["error"]["message"]


def test_unknown_method(trainer):
    e = trainer.call("fly")["error"]
    assert e["code"] == "unknown_method" and "fly" in e["message"]


def test_train_before_load(trainer):
    assert trainer.call("train", batch())["error"]["code"] == "not_loaded"


def test_invalid_load(trainer):
    e = trainer.call("load", {"random": {}, "lora": {"rank": -1}})["error"]
    assert e["code"] == "invalid_params" and "load.lora.rank" in e["message"]
    e = trainer.call("load", {"model": "/nonexistent/model"})["error"]
    assert e["code"] == "invalid_params" and "not a folder" in e["message"]


def test_load_train_save_metrics(trainer, tmp_path):
    r = trainer.call("load", {"random": {"arch": "llama"}, "lr": 1e-3, "device": "cpu"})["result"]
    assert r["arch"] == "LlamaForCausalLM" and r["trainable"] > 0
    r = trainer.call("train", batch())["result"]
    assert r["steps"] == 1 and r["skipped_groups"] == ["always-solved"] and r["loss"] is not None
    e = trainer.call("train", {"rollouts": [{"tokens": [1, 999], "mask": [0, 1], "reward": 1, "group": 1}]})["error"]
    assert e["code"] == "invalid_params" and "not a token id" in e["message"]
    r = trainer.call("save", {"path": str(tmp_path / "a")})["result"]
    assert "adapter_model.safetensors" in r["files"]
    m = trainer.call("metrics")["result"]
    assert m["loaded"] and m["steps"] == 1 and m["tokens"] == 48
    r = trainer.call("logprobs", {"tokens": [1, 2, 3], "top_k": 2})["result"]
    assert r["tokens"] == [1, 2, 3] and len(r["top"]) == 2 and "token" not in r["top"][0]  # no tokenizer
    e = trainer.call("logprobs", {"text": "hi"})["error"]
    assert e["code"] == "invalid_params" and "no tokenizer" in e["message"]


def test_shutdown_ends_the_process(trainer):
    assert trainer.call("shutdown")["result"] == {}
    assert trainer.p.wait(timeout=30) == 0
    assert trainer.p.stdout.read() == ""


def test_end_of_input_ends_the_process():
    t = Trainer()
    t.p.stdin.close()
    assert t.p.wait(timeout=30) == 0
