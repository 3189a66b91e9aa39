"""The trainer's side of the JSON-lines protocol (documented in ../README.md).

One request per line on stdin, one response per line on stdout, in order. stdout carries
nothing else: file descriptor 1 is pointed at stderr before torch is imported, so a stray
print or a C library's warning cannot corrupt the stream; the protocol writes to a private
duplicate of the original stdout. Every failure becomes an error response and the loop goes
on; only shutdown or the end of stdin ends the process. Under torchrun (``--distributed``,
see parallel.py) rank 0 reads and answers, the other ranks receive each line by broadcast,
and an error that may have left a rank behind in a collective ends every rank after the
answer.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import signal
import sys
import time
import traceback

from . import PROTOCOL_VERSION
from . import parallel
from .config import ConfigError, Load

log = logging.getLogger("frognano_trainer")


class RequestError(Exception):
    """An error with a stable code the Go side can switch on."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Server:
    def __init__(self, world=None):
        self.world = world or parallel.World()
        self.policy = None
        self.encoder = None  # the tokenize request's, for the loaded policy's tokenizer
        self.done = False
        # set when a request failed in a way the ranks may not agree on (distributed only):
        # the process must end after answering
        self.fatal = False
        self.started = time.monotonic()
        self.methods = {
            "hello": self.hello,
            "load": self.load,
            "train": self.train,
            "save": self.save,
            "merge_export": self.merge_export,
            "logprobs": self.logprobs,
            "tokenize": self.tokenize,
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
        # These three are raised alike on every rank (validation happens before any
        # collective; the loss is all-reduced before its check): the ranks stay in step.
        except RequestError as e:
            return _error(rid, e.code, str(e))
        except ConfigError as e:
            return _error(rid, "invalid_params", str(e))
        except FloatingPointError as e:
            return _error(rid, "nonfinite", str(e))
        except Exception as e:  # noqa: BLE001 - every failure must become a response
            log.error("request %r failed on rank %d:\n%s", rid, self.world.rank, traceback.format_exc())
            oom = isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError"
            msg = f"out of memory: {e}" if isinstance(e, MemoryError) else f"{type(e).__name__}: {e}"
            if self.world.distributed:
                # another rank may be waiting for this one in a collective: nothing after
                # this can be trusted, and the trainer ends once this is answered
                self.fatal = True
                msg += (f" (rank {self.world.rank} of {self.world.size}; a failure on one rank of a distributed "
                        "trainer ends it: the log has each failing rank's traceback; start the trainer again)")
            return _error(rid, "out_of_memory" if oom else "internal", msg)

    def hello(self, params):
        import torch
        import transformers

        import peft

        cuda = torch.cuda.is_available()
        from .model import pick_device, pick_dtype

        dev = pick_device()
        return {**self.world.describe(),
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

        self.policy = self.encoder = None  # free the previous model before building the next
        self.policy = Policy(cfg, self.world)
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

    def tokenize(self, params):
        from .encode import Encoder, tokenize

        policy = self._need_policy()
        if self.encoder is None and policy.tokenizer is not None:
            self.encoder = Encoder(policy.tokenizer)
        return tokenize(self.encoder, params)

    def metrics(self, params):
        extra = set(params) - {"adapter_digest"}
        if extra:
            raise ConfigError(f"metrics: unknown field(s) {', '.join(sorted(extra))}; known: adapter_digest")
        digest = params.get("adapter_digest", False)
        if not isinstance(digest, bool):
            raise ConfigError("metrics.adapter_digest must be true or false")
        m = {"uptime_s": time.monotonic() - self.started, "loaded": self.policy is not None,
             **self.world.describe()}
        if self.policy is not None:
            m.update(self.policy.metrics(digest))
            if digest:
                # every rank's, in rank order: under DDP they must all be equal
                m["adapter_digests"] = self.world.gather(m.pop("adapter_digest"))
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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m frognano_trainer")
    ap.add_argument("--distributed", choices=parallel.MODES,
                    help="run as one rank under torchrun (rank 0 speaks the protocol)")
    args = ap.parse_args(argv)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("FROGNANO_TRAINER_LOG", "INFO"),
                        format="trainer: %(levelname)s %(message)s")
    world = parallel.start(args.distributed)
    if world.distributed and world.rank:
        logging.getLogger().handlers[0].setFormatter(logging.Formatter(f"trainer[{world.rank}]: %(levelname)s %(message)s"))
    server = Server(world)
    pending = []  # the id of the request rank 0 is working on, until it is answered
    if world.distributed:
        # torchrun stops every rank with SIGTERM when one fails: rank 0 answers the request
        # in flight before it goes (as soon as Python regains control), so the Go side reads
        # an error, not only the end of the stream
        def on_term(signum, frame):
            if world.leader and pending:
                out.write(json.dumps(_error(pending[0], "internal", (
                    "another rank of the distributed trainer failed and torchrun stopped the rest: "
                    "the trainer's log has the failing rank's traceback; start it again"))) + "\n")
                out.flush()
            os._exit(128 + signum)

        signal.signal(signal.SIGTERM, on_term)
    lines = iter(sys.stdin) if world.leader else None
    while True:
        line = None
        if world.leader:
            line = next((l for l in lines if l.strip()), None)  # None: the end of input
            pending[:] = [_request_id(line)] if line is not None else []
        try:
            line = world.broadcast(line)
        except Exception as e:  # noqa: BLE001 - a peer is gone
            log.error("rank %d: lost the other ranks (%s); stopping", world.rank, e)
            os._exit(1)
        if line is None:
            break
        resp = server.handle_line(line)
        if world.distributed:
            if server.fatal and not world.leader:
                os._exit(1)  # the others notice at once (gloo) or torchrun stops them
            if not server.fatal:
                resp, server.fatal = _agree(world, resp)
        if world.leader:
            pending.clear()
            out.write(json.dumps(resp, allow_nan=False) + "\n")
            out.flush()
        if server.fatal:
            out.close()
            os._exit(1)
        if server.done:
            break
    if world.leader:
        out.close()
    parallel.finish(world)


def _request_id(line):
    try:
        req = json.loads(line)
        return req.get("id") if isinstance(req, dict) else None
    except ValueError:
        return None


def _agree(world, resp):
    """(response, fatal): rank 0's response, or the first error another rank had where rank 0
    had none. A rank that died makes the gather fail: that is an error too, and fatal."""
    mine = resp.get("error")
    try:
        errs = world.gather(mine)
    except Exception as e:  # noqa: BLE001 - a peer is gone
        log.error("rank %d: lost the other ranks after request %r: %s", world.rank, resp.get("id"), e)
        return _error(resp.get("id"), "internal", (
            f"a rank of the distributed trainer stopped ({type(e).__name__}: {e}); the trainer ends: "
            "see its log, and start it again")), True
    if mine is None:
        for r, e in enumerate(errs):
            if e is not None:
                return _error(resp.get("id"), e["code"], f"rank {r}: {e['message']}"), False
    return resp, False
