"""One trainer over several processes under torchrun (PyTorch's own launcher).

`torchrun --nproc_per_node=N -m frognano_trainer --distributed ddp|fsdp` starts N ranks.
Rank 0 speaks the protocol on stdin/stdout; it broadcasts each request line to the other
ranks, every rank handles it the same way (the same validation, the same model calls), and
only rank 0 answers. The distribution itself is PyTorch's: DistributedDataParallel for a
LoRA model that fits one device, FSDP2's `fully_shard` (per decoder layer, then the root)
when the base model does not.

A train request's rollouts are split across ranks by group; every rank sees the whole
request, so the token count that normalises the loss is known everywhere without a
collective, and each rank's loss is scaled so that the averaged gradient equals the
one-process gradient.

Failures: an error every rank raises alike (bad parameters, a non-finite loss, which is
all-reduced before the check) is answered and the loop goes on. Any other error on one rank
may leave the others waiting in a collective, so it ends the trainer: a rank other than 0
exits at once (its peers' gloo sockets close, their collectives fail, and torchrun stops the
rest), rank 0 answers with the error first. The Go side sees an error, never a hang.
"""

from __future__ import annotations

import datetime
import logging
import os
import sys

import torch

log = logging.getLogger("frognano_trainer")

MODES = ("ddp", "fsdp")


class World:
    """Where this process stands: rank 0 of 1 when not under torchrun."""

    def __init__(self, mode=None, rank=0, size=1, local_rank=0, control=None):
        self.mode, self.rank, self.size, self.local_rank, self.control = mode, rank, size, local_rank, control

    @property
    def distributed(self):
        return self.mode is not None

    @property
    def leader(self):
        return self.rank == 0

    def describe(self):
        return {"distributed": self.mode or "", "world_size": self.size, "rank": self.rank}

    def broadcast(self, obj):
        """Rank 0's obj on every rank (the request line, or None at the end of input)."""
        if not self.distributed:
            return obj
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0, group=self.control)
        return box[0]

    def gather(self, obj):
        """Every rank's obj, in rank order, on every rank."""
        if not self.distributed:
            return [obj]
        import torch.distributed as dist

        out = [None] * self.size
        dist.all_gather_object(out, obj, group=self.control)
        return out

    def sum(self, values):
        """Element-wise sum of a list of floats over the ranks."""
        if not self.distributed:
            return list(values)
        import torch.distributed as dist

        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, group=self.control)
        return t.tolist()


def start(mode):
    """Joins torchrun's process group; World() when mode is None."""
    if mode is None:
        return World()
    if mode not in MODES:
        raise SystemExit(f"--distributed must be one of {', '.join(MODES)}, not {mode!r}")
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise SystemExit("--distributed needs torchrun: python -m torch.distributed.run --nproc_per_node=N -m frognano_trainer --distributed " + mode)
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local)
    # gloo for CPU tensors, NCCL for GPU ones: a load with device cpu still works on a GPU machine
    dist.init_process_group("cpu:gloo,cuda:nccl" if cuda else "gloo")
    # Requests and small results travel over a gloo group of their own: the Go side may stay
    # silent for hours between requests (rollouts), so its timeout is long, and gloo notices a
    # dead peer by its closed socket at once where NCCL waits out its timeout.
    control = dist.new_group(backend="gloo", timeout=datetime.timedelta(days=30))
    w = World(mode, dist.get_rank(), dist.get_world_size(), local, control)
    log.info("rank %d of %d (%s)", w.rank, w.size, mode)
    return w


def finish(world):
    """Ends a rank after shutdown or the end of input, with os._exit, once our own streams
    are flushed: every answer has been written and every file the trainer wrote (adapters,
    exports) is closed, so the interpreter's teardown has nothing left to do but free
    memory and unload modules, and that is slow and fragile. One process: freeing a model's
    tensors and torch's modules took over 30 s at load 15 on two cores, so the Go side's
    shutdown bound killed a trainer whose export was already whole, and the loop redid
    the training. Under torchrun every rank first waits for the others: a rank once ended
    with SIGABRT after every request had been answered ("terminate called without an active
    exception", CI, FSDP; not reproduced in five runs here), so torchrun reported a clean
    shutdown as a failure: the likely cause is the teardown of the process groups (explicit,
    or by the interpreter's exit) racing a peer already gone, which os._exit skips."""
    code = 0
    if world.distributed:
        import torch.distributed as dist

        try:
            dist.barrier(group=world.control)
        except Exception as e:  # noqa: BLE001 - a peer is gone: leaving anyway, but not as success
            log.error("rank %d: the other ranks were gone at shutdown (%s)", world.rank, e)
            code = 1
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def shares(items, weights, size):
    """Splits item indices (whole groups, each a list of rollout indices) across size ranks,
    heaviest first onto the least loaded rank; deterministic, so every rank computes the
    same split from the same request."""
    loads = [0] * size
    out = [[] for _ in range(size)]
    order = sorted(range(len(items)), key=lambda k: (-weights[k], k))
    for k in order:
        r = min(range(size), key=lambda j: (loads[j], j))
        out[r].extend(items[k])
        loads[r] += weights[k]
    for o in out:
        o.sort()
    return out


def wrap(module, world, device, dtype, layers):
    """The module the training passes run through: module itself for one process, DDP or
    FSDP2 over it under torchrun. layers: the decoder layers (FSDP shards each)."""
    if not world.distributed:
        return module
    if world.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        module.to(device)
        # "cuda" is this rank's GPU (start() set it), whose index device may not carry
        ids = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else None
        # no buffer broadcast: nothing trains a buffer, and a broadcast in forward would
        # make a forward on one rank alone wait for the others
        return DDP(module, device_ids=ids, broadcast_buffers=False)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh(device.type, (world.size,))
    kw = {"mesh": mesh}
    if dtype != torch.float32:
        # LoRA weights are kept in fp32 (peft), the base in bf16: FSDP gathers both in the
        # compute dtype and reduces gradients in fp32
        kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
    for layer in layers:
        fully_shard(layer, **kw)
    fully_shard(module, **kw)
    return module


def full_tensor(t):
    """A parameter's whole value on every rank (FSDP shards it); collective under FSDP."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def fault(method, world):
    """Test hook: FROGNANO_TRAINER_FAULT=method:rank[:exit] makes that rank fail inside that
    method (raise, or exit at once as a crash would), so that tests can prove a failing rank
    yields an error and no hang."""
    spec = os.environ.get("FROGNANO_TRAINER_FAULT", "")
    if not spec:
        return
    parts = spec.split(":")
    if parts[0] != method or int(parts[1]) != world.rank:
        return
    if len(parts) > 2 and parts[2] == "exit":
        log.error("FROGNANO_TRAINER_FAULT: rank %d exits in %s", world.rank, method)
        os._exit(3)
    raise RuntimeError(f"FROGNANO_TRAINER_FAULT: rank {world.rank} fails in {method}")
