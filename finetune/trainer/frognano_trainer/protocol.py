"""The trainer's side of the JSON-lines protocol (documented in ../README.md).

One request per line on stdin, one response per line on stdout, in order. stdout carries
nothing else: file descriptor 1 is pointed at stderr before torch is imported, so a stray
print or a C library's warning cannot corrupt the stream; the protocol writes to a private
duplicate of the original stdout. Every failure becomes an error response and the loop goes
on; only shutdown or the end of stdin ends the process.
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import sys
import time
import traceback

from . import PROTOCOL_VERSION
from .config import ConfigError, Load

log = logging.getLogger("frognano_trainer")


class RequestError(Exception):
    """An error with a stable code the Go side can switch on."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Server:
    def __init__(self):
        self.policy = None
        self.done = False
        self.started = time.monotonic()
        self.methods = {
            "hello": self.hello,
            "load": self.load,
            "train": self.train,
            "save": self.save,
            "merge_export": self.merge_export,
            "logprobs": self.logprobs,
            "metrics": self.metrics,
            "shutdown": self.shutdown,
        }

    def handle_line(self, line):
        """Returns the response object for one request line; never raises."""
        rid = None
        try:
            try:
                req = json.loads(line)
            except ValueError as e:
                raise RequestError("bad_request", f"not JSON: {e}") from None
            if not isinstance(req, dict):
                raise RequestError("bad_request", "a request must be a JSON object")
            rid = req.get("id")
            method, params = req.get("method"), req.get("params", {})
            if not isinstance(method, str):
                raise RequestError("bad_request", 'a request needs a "method" string')
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise RequestError("bad_request", '"params" must be an object')
            fn = self.methods.get(method)
            if fn is None:
                raise RequestError("unknown_method", f"unknown method {method!r}; known: {', '.join(self.methods)}")
            return {"id": rid, "result": _finite(fn(params))}
        except RequestError as e:
            return _error(rid, e.code, str(e))
        except ConfigError as e:
            return _error(rid, "invalid_params", str(e))
        except FloatingPointError as e:
            return _error(rid, "nonfinite", str(e))
        except MemoryError as e:
            return _error(rid, "out_of_memory", f"out of memory: {e}")
        except Exception as e:  # noqa: BLE001 - every failure must become a response
            log.error("request %r failed:\n%s", rid, traceback.format_exc())
            code = "out_of_memory" if type(e).__name__ == "OutOfMemoryError" else "internal"
            return _error(rid, code, f"{type(e).__name__}: {e}")

    def hello(self, params):
        import torch
        import transformers

        import peft

        cuda = torch.cuda.is_available()
        from .model import pick_device, pick_dtype

        dev = pick_device()
        return {
            "protocol": PROTOCOL_VERSION,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
            "cuda_available": cuda,
            "cuda_version": torch.version.cuda,
            "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
            "device": str(dev),
            "dtype": str(pick_dtype("auto", dev)).removeprefix("torch."),
        }

    def load(self, params):
        cfg = Load.parse(params)
        from .model import Policy

        self.policy = None  # free the previous model before building the next
        self.policy = Policy(cfg)
        return self.policy.describe()

    def _need_policy(self):
        if self.policy is None:
            raise RequestError("not_loaded", "no model is loaded: send load first")
        return self.policy

    def train(self, params):
        return self._need_policy().train(params)

    def save(self, params):
        path = params.get("path")
        if not isinstance(path, str) or not path:
            raise ConfigError("save.path must be a folder path")
        return self._need_policy().save(path)

    def merge_export(self, params):
        path = params.get("path")
        if not isinstance(path, str) or not path:
            raise ConfigError("merge_export.path must be a folder path")
        return self._need_policy().merge_export(path, params.get("dtype", "bfloat16"))

    def logprobs(self, params):
        return self._need_policy().next_token_logprobs(params)

    def metrics(self, params):
        m = {"uptime_s": time.monotonic() - self.started, "loaded": self.policy is not None}
        if self.policy is not None:
            m.update(self.policy.metrics())
        return m

    def shutdown(self, params):
        self.done = True
        return {}


def _error(rid, code, message):
    return {"id": rid, "error": {"code": code, "message": message}}


def _finite(v):
    """JSON has no NaN or infinity (Go's decoder rejects them): they become null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def main():
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("FROGNANO_TRAINER_LOG", "INFO"),
                        format="trainer: %(levelname)s %(message)s")
    server = Server()
    for line in sys.stdin:
        if not line.strip():
            continue
        resp = server.handle_line(line)
        out.write(json.dumps(resp, allow_nan=False) + "\n")
        out.flush()
        if server.done:
            break
    out.close()
