"""The trainer's benchmark and GPU check: `python -m frognano_trainer.bench` (gpu-check.sh).

1. Throughput: GRPO train requests on a random-initialised model of FrogNano's real size
   (config.PRESETS["frognano-4b"]) in bf16 with gradient checkpointing, at 8k-token
   sequences: step time, tokens/s, peak memory, and model FLOPs utilisation against the
   GPU's bf16 peak. The requests go through the trainer's own Policy, as the protocol's
   `train` does. A forward breakdown by layer kind says where the time goes.
2. End to end: the real trainer process (and under torchrun with --distributed ddp/fsdp)
   driven over the protocol on a tiny Qwen3.5: load, two train steps, logprobs, save,
   merge_export.

`--mini` runs both on a tiny config and a few tokens (CPU, seconds): it proves the script,
not the speed. The report is written as report.json and report.md in --out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def flops_per_token(model_cfg, linear_params, seq):
    """Model FLOPs of one train request per token, and the same with checkpoint recompute.

    Counted: every linear layer's matmul (2 FLOPs per weight per token; the LM head
    included) and the full-attention layers' score and value products (causal: on average
    seq/2 keys per query). A train request runs a no-grad forward for the old policy, the
    training forward, and a backward that computes activation gradients only (LoRA: the base
    weights get none), which costs one forward's matmuls, twice for attention. Gradient
    checkpointing recomputes one more forward (hardware FLOPs, not model FLOPs). The Gated
    DeltaNet recurrences and the LoRA matmuls are left out (a few percent).
    """
    c = model_cfg
    full = sum(1 for t in (getattr(c, "layer_types", None) or ["full_attention"] * c.num_hidden_layers) if t == "full_attention")
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    attn = full * 4 * (seq / 2) * c.num_attention_heads * head_dim  # QK^T and AV, 2 FLOPs each
    lin = 2 * linear_params
    fwd = lin + attn
    model = fwd + fwd + (lin + 2 * attn)
    return model, model + fwd


def _linear_params(model):
    import torch

    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def _batch(seq, sequences, vocab, seed):
    rng = random.Random(seed)
    prompt = max(1, seq // 10)
    rs = []
    for i in range(sequences):
        tokens = [rng.randrange(vocab) for _ in range(seq)]
        mask = [0] * prompt + [1] * (seq - prompt)
        rs.append({"tokens": tokens, "mask": mask, "reward": float(i % 2), "group": "bench"})
    return {"rollouts": rs}


def fast_paths():
    """Which optional kernels transformers could use for Qwen3.5's Gated DeltaNet layers."""
    return {name: importlib.util.find_spec(mod) is not None
            for name, mod in (("flash-linear-attention", "fla"), ("causal-conv1d", "causal_conv1d"),
                              ("kernels (hub)", "kernels"))}


def breakdown(policy, seq, vocab):
    """Seconds of one no-grad forward at seq tokens, by layer kind (synchronised hooks)."""
    import torch

    lm = policy.model.get_base_model()
    cuda = policy.device.type == "cuda"
    spent, starts = {}, {}

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def hook(kind):
        def pre(mod, args, kwargs=None):
            sync()
            starts[id(mod)] = time.perf_counter()

        def post(mod, args, out, kwargs=None):
            sync()
            spent[kind] = spent.get(kind, 0.0) + time.perf_counter() - starts.pop(id(mod))
        return pre, post

    handles = []
    for layer in lm.get_decoder().layers:
        for name, kind in (("linear_attn", "Gated DeltaNet (linear attention)"), ("self_attn", "full attention"),
                           ("mlp", "MLP")):
            mod = getattr(layer, name, None)
            if mod is not None:
                pre, post = hook(kind)
                handles.append(mod.register_forward_pre_hook(pre))
                handles.append(mod.register_forward_hook(post))
    pre, post = hook("LM head and log-probs")
    head = lm.get_output_embeddings()
    handles += [head.register_forward_pre_hook(pre), head.register_forward_hook(post)]
    ids = torch.randint(0, vocab, (seq,), device=policy.device)
    policy.model.eval()
    try:
        with torch.no_grad():
            sync()
            t = time.perf_counter()
            policy.logprobs(ids)
            sync()
            total = time.perf_counter() - t
    finally:
        for h in handles:
            h.remove()
    spent["total"] = total
    return spent


def throughput(args, on_step=lambda tp: None):
    import torch

    from .config import Load
    from .model import Policy

    if args.mini:
        load = {"random": {"arch": "qwen3_5", "vocab_size": 320}, "device": args.device,
                "gradient_checkpointing": True, "logprob_chunk": 16}
    else:
        load = {"random": {"preset": "frognano-4b"}, "device": args.device, "gradient_checkpointing": True}
    t = time.perf_counter()
    p = Policy(Load.parse(load))
    built = time.perf_counter() - t
    cuda = p.device.type == "cuda"
    cfg = p.model.get_base_model().config
    lin = _linear_params(p.model.get_base_model())
    out = {"config": "tiny qwen3_5 (mini)" if args.mini else "frognano-4b (Qwen3.5-4B text, random init)",
           "describe": p.describe(), "build_s": built, "seq": args.seq, "sequences": args.sequences,
           "linear_params": lin, "steps": []}
    model_f, hw_f = flops_per_token(cfg, lin, args.seq)
    out["model_flops_per_token"], out["hardware_flops_per_token"] = model_f, hw_f
    deadline = time.monotonic() + args.budget_s
    last = 0.0
    for k in range(args.warmup + args.steps):
        if k >= args.warmup + 1 and time.monotonic() + last > deadline:
            out["stopped"] = f"time budget of {args.budget_s:.0f} s spent after {k - args.warmup} measured steps"
            break
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        r = p.train(_batch(args.seq, args.sequences, p.vocab_size, k))
        if cuda:
            torch.cuda.synchronize()
        dt = last = time.perf_counter() - t
        step = {"warmup": k < args.warmup, "step_s": dt, "loss": r["loss"], "grad_norm": r["grad_norm"]}
        if cuda:
            step["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
        out["steps"].append(step)
        _summarise(out, args, cuda, model_f, hw_f)
        on_step(out)
        print(f"bench: step {k} ({'warmup' if k < args.warmup else 'measured'}): {dt:.2f} s", file=sys.stderr, flush=True)
    out["breakdown_s"] = breakdown(p, args.seq, p.vocab_size)
    return out


def _summarise(out, args, cuda, model_f, hw_f):
    measured = [s for s in out["steps"] if not s["warmup"]] or out["steps"]
    st = sum(s["step_s"] for s in measured) / len(measured)
    tokens = args.seq * args.sequences
    out["step_s"] = st
    out["tokens_per_s"] = tokens / st
    out["measured_steps"] = sum(not s["warmup"] for s in out["steps"])
    if cuda:
        out["peak_memory_gib"] = max(s["peak_memory_gib"] for s in measured)
        out["mfu"] = model_f * tokens / st / (args.peak_tflops * 1e12)
        out["hfu"] = hw_f * tokens / st / (args.peak_tflops * 1e12)


def _trainer_cmd(mode, procs):
    if mode == "single":
        return [sys.executable, "-m", "frognano_trainer"]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={procs}",
            "-m", "frognano_trainer", "--distributed", mode]


def end_to_end(mode, procs, device, workdir, timeout):
    """The tiny Qwen3.5 through the real trainer process over the protocol."""
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    p = subprocess.Popen(_trainer_cmd(mode, procs), cwd=HERE, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    res = {"mode": mode, "procs": procs if mode != "single" else 1, "ok": False, "calls": []}
    n = 0

    def call(method, params=None):
        nonlocal n
        n += 1
        p.stdin.write(json.dumps({"id": n, "method": method, "params": params or {}}) + "\n")
        p.stdin.flush()
        line = p.stdout.readline()
        if not line:
            raise RuntimeError(f"{method}: the trainer exited: " + p.stderr.read()[-2000:])
        r = json.loads(line)
        res["calls"].append(method)
        if "error" in r:
            raise RuntimeError(f"{method}: {r['error']['code']}: {r['error']['message']}")
        return r["result"]

    try:
        import threading

        timer = threading.Timer(timeout, lambda: os.killpg(p.pid, 9))
        timer.start()
        try:
            res["hello"] = call("hello")
            call("load", {"random": {"arch": "qwen3_5", "vocab_size": 320, "initializer_range": 0.2},
                          "device": device, "lr": 1e-3})
            b = _batch(96, 4, 320, 1)
            for i, r in enumerate(b["rollouts"]):
                r["group"] = f"g{i // 2}"
            res["train_s"] = [call("train", b)["step_time_s"] for _ in range(2)]
            lp = call("logprobs", {"text": "hello there", "top_k": 3})
            res["top_token"] = lp["top"][0]
            call("save", {"path": os.path.join(workdir, f"adapter-{mode}")})
            ex = call("merge_export", {"path": os.path.join(workdir, f"merged-{mode}"), "dtype": "float16"})
            res["export_problems"] = ex["problems"]
            m = call("metrics", {"adapter_digest": True})
            res["adapter_digests_equal"] = len(set(m["adapter_digests"])) == 1
            call("shutdown")
            res["ok"] = not ex["problems"] and (mode != "ddp" or res["adapter_digests_equal"])
        finally:
            timer.cancel()
    except Exception as e:  # noqa: BLE001 - reported
        res["error"] = str(e)
    finally:
        if p.poll() is None:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait()
    res["wall_s"] = time.perf_counter() - t0
    return res


def environment():
    import torch
    import transformers

    import peft

    cuda = torch.cuda.is_available()
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "peft": peft.__version__,
            "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
            "cpus": os.cpu_count(), "fast_paths": fast_paths()}


def limits(env, tp):
    """What holds the throughput back, in words, from what was measured."""
    out = []
    fp = env["fast_paths"]
    if not fp["flash-linear-attention"]:
        out.append("flash-linear-attention is not installed: transformers runs the Gated DeltaNet layers "
                   "(24 of FrogNano's 32) in its pure-torch chunked fallback (a Python loop over 64-token "
                   "chunks with small matmuls)")
    if not fp["causal-conv1d"]:
        out.append("causal-conv1d is not installed: the DeltaNet's short convolution runs as a plain Conv1d")
    bd = tp.get("breakdown_s") or {}
    total = bd.get("total")
    if total:
        parts = sorted(((v, k) for k, v in bd.items() if k != "total"), reverse=True)
        out.append("one forward at the bench length spends " + ", ".join(
            f"{100 * v / total:.0f}% in {k}" for v, k in parts) + " (synchronised per module)")
    out.append("gradient checkpointing recomputes each layer's forward in the backward (hardware FLOPs "
               f"{tp['hardware_flops_per_token'] / tp['model_flops_per_token']:.2f}x the model FLOPs)")
    out.append("the LM head is computed in chunks, twice with checkpointing, in float32 log-softmax; "
               "LoRA adds small, poorly-shaped matmuls to every linear layer")
    return out


def markdown(rep):
    env, tp = rep["environment"], rep["throughput"] or {}
    lines = [f"# frognano trainer GPU check{' (mini: tiny model on ' + rep['device'] + ', proves the script only)' if rep['mini'] else ''}",
             "", f"- when: {rep['when']}; took {rep['took_s']:.0f} s",
             f"- torch {env['torch']}, transformers {env['transformers']}, peft {env['peft']}, Python {env['python']}; "
             f"GPUs: {', '.join(env['gpus']) or 'none'}; {env['cpus']} CPUs",
             "- optional kernels: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in env["fast_paths"].items())]
    lines += _throughput_md(rep, tp)
    lines += ["", "## End to end (tiny Qwen3.5 over the protocol)", ""]
    for e in rep["end_to_end"]:
        st = "ok" if e["ok"] else "FAILED: " + e.get("error", str(e.get("export_problems")))
        ts = ", ".join(f"{x:.2f}" for x in e.get("train_s", []))
        lines.append(f"- {e['mode']} ({e['procs']} process{'es' if e['procs'] > 1 else ''}): {st}; "
                     f"train steps {ts} s; wall {e['wall_s']:.0f} s")
    return "\n".join(lines) + "\n"


def _throughput_md(rep, tp):
    if not tp.get("steps"):
        return ["", "## Throughput", "", "- not measured (yet): the run ended before a train step finished"]
    lines = ["", "## Throughput", "",
             f"- model: {tp['config']}: {tp['describe']['parameters'] / 1e6:,.1f} M parameters, "
             f"{tp['describe']['trainable'] / 1e6:.2f} M trainable (LoRA), {tp['describe']['dtype']}, "
             f"gradient checkpointing {tp['describe']['gradient_checkpointing']}, built in {tp['build_s']:.1f} s",
             f"- a train request: {tp['sequences']} sequences x {tp['seq']} tokens (one group, one optimizer step, "
             "the old policy's forward included)",
             f"- step time {tp['step_s']:.2f} s; {tp['tokens_per_s']:.0f} tokens/s"]
    if "mfu" in tp:
        lines.append(f"- peak memory {tp['peak_memory_gib']:.1f} GiB; model FLOPs utilisation "
                     f"**{100 * tp['mfu']:.1f}%** of {rep['peak_tflops']:.0f} TFLOP/s bf16 "
                     f"(with checkpoint recompute: {100 * tp['hfu']:.1f}%)")
    lines.append(f"- measured steps: {tp['measured_steps']} (after {sum(s['warmup'] for s in tp['steps'])} warm-up)")
    if tp.get("stopped"):
        lines.append(f"- {tp['stopped']}")
    if rep.get("limits"):
        lines += ["", "What limits it:", ""] + [f"- {x}" for x in rep["limits"]]
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m frognano_trainer.bench")
    ap.add_argument("--mini", action="store_true", help="a tiny model and a few tokens: proves the script")
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--seq", type=int, help="tokens per sequence (default 8192; mini 64)")
    ap.add_argument("--sequences", type=int, default=2, help="sequences per train request (one group)")
    ap.add_argument("--steps", type=int, default=3, help="measured train requests")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--budget-s", type=float, default=300, help="stop measuring after this long")
    ap.add_argument("--deadline-s", type=float, default=400,
                    help="the whole run's time: measuring stops early enough to finish within it")
    ap.add_argument("--peak-tflops", type=float, default=790, help="the GPU's dense bf16 peak")
    ap.add_argument("--e2e", default="single,ddp,fsdp", help="end-to-end modes ('' for none)")
    ap.add_argument("--e2e-timeout", type=float, default=180)
    ap.add_argument("--out", default="gpu-check-report")
    args = ap.parse_args(argv)
    if args.seq is None:
        args.seq = 64 if args.mini else 8192
    os.makedirs(args.out, exist_ok=True)
    import torch

    t0 = time.perf_counter()
    env = environment()
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    rep = {"mini": args.mini, "device": device, "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "peak_tflops": args.peak_tflops, "environment": env, "end_to_end": [], "throughput": None}
    args.device = device

    def write():
        # after every phase, so that a run cut short by its timeout still leaves a report
        rep["took_s"] = time.perf_counter() - t0
        with open(os.path.join(args.out, "report.json"), "w") as f:
            json.dump(rep, f, indent=2, default=str)
        md = markdown(rep)
        with open(os.path.join(args.out, "report.md"), "w") as f:
            f.write(md)
        return md

    # the cheap end-to-end runs first: they prove the trainer works on this machine even if
    # the throughput run is cut short
    procs = max(1, torch.cuda.device_count()) if device == "cuda" else 1
    for m in (x for x in args.e2e.split(",") if x):
        rep["end_to_end"].append(end_to_end(m, procs, device, args.out, args.e2e_timeout))
        write()
    # what is left of the deadline, less a margin for the breakdown forward and the report
    args.budget_s = max(0.0, min(args.budget_s, args.deadline_s - (time.perf_counter() - t0) - 45))
    rep["throughput"] = throughput(args, on_step=lambda tp: (rep.update(throughput=tp), write()))
    rep["limits"] = limits(env, rep["throughput"])
    print(write())
    return 0 if all(e["ok"] for e in rep["end_to_end"]) else 1


if __name__ == "__main__":
    sys.exit(main())
