"""The policy: a causal LM with a LoRA adapter on all linear layers, and one GRPO update.

Imports of torch, transformers and peft happen here, not in protocol.py, so that the
protocol answers a malformed line even when the environment is broken.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import os
import time

import torch

from . import grpo, parallel
from .config import Batch, ConfigError, Load
from .tokenizer import EOT, IM_END, MIN_VOCAB, SPECIALS, byte_tokenizer, load_tokenizer, text_only_output, token_bytes

log = logging.getLogger("frognano_trainer")


def pick_device(want="auto"):
    if want == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device cuda was asked for, but torch sees no CUDA device")
    if want == "auto":
        want = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(want)


def pick_dtype(want, device):
    # bf16 on GPU halves memory and runs the tensor cores; on CPU bf16 matmuls are slow and
    # lose the precision the tiny test models need, so fp32 there.
    if want == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    return getattr(torch, want)


def random_config(r):
    """A tiny transformers config of the asked architecture, or a preset's full-size one
    (nothing is downloaded)."""
    if r.preset is not None:
        from transformers import Qwen3_5TextConfig

        from .config import PRESETS

        p = {k: v for k, v in PRESETS[r.preset].items() if k != "arch"}
        n = p["num_hidden_layers"]
        extra = {"initializer_range": r.initializer_range} if r.initializer_range is not None else {}
        return Qwen3_5TextConfig(layer_types=["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)],
                                 **p, **extra)
    common = dict(
        vocab_size=r.vocab_size,
        hidden_size=r.hidden_size,
        intermediate_size=r.intermediate_size,
        num_hidden_layers=r.num_hidden_layers,
        num_attention_heads=r.num_attention_heads,
        num_key_value_heads=r.num_key_value_heads,
        # room for the agent's ~4,000-token system prompt and a second turn: Ollama caps
        # num_ctx at this, and a prompt past it is truncated (not token-exact)
        max_position_embeddings=16384,
        tie_word_embeddings=False,
    )
    if r.initializer_range is not None:
        common["initializer_range"] = r.initializer_range
    if r.vocab_size >= MIN_VOCAB:
        # the ids of the byte tokenizer's control tokens (tokenizer.py), not the defaults'
        # bos 1 / eos 2, which would be byte tokens there
        common.update(bos_token_id=None, eos_token_id=256 + SPECIALS.index(IM_END),
                      pad_token_id=256 + SPECIALS.index(EOT))
    head_dim = r.hidden_size // r.num_attention_heads
    if r.arch == "llama":
        from transformers import LlamaConfig

        return LlamaConfig(**common)
    if r.arch == "qwen3":
        from transformers import Qwen3Config

        return Qwen3Config(head_dim=head_dim, **common)
    try:
        from transformers import Qwen3_5TextConfig
    except ImportError as e:
        raise ConfigError(f"this transformers has no Qwen3.5 support: {e}") from e
    # Gated DeltaNet layers alternate with full attention (FrogNano: 3 to 1); two layers
    # here, one of each, so that both kinds are trained.
    return Qwen3_5TextConfig(
        head_dim=head_dim,
        layer_types=["linear_attention", "full_attention"] * max(1, r.num_hidden_layers // 2),
        linear_num_key_heads=2,
        linear_num_value_heads=2,
        linear_key_head_dim=16,
        linear_value_head_dim=16,
        **{**common, "num_hidden_layers": 2 * max(1, r.num_hidden_layers // 2)},
    )


class Scorer(torch.nn.Module):
    """The one module every forward pass goes through, so that DDP and FSDP (parallel.py) see
    each pass: per-token log probabilities of a sequence, or the next-token distribution.

    The LM head runs on the decoder's hidden states in chunks of the sequence (grpo.py):
    a 248k vocabulary at 8k tokens would otherwise materialise gigabytes of logits.
    """

    def __init__(self, lm, chunk):
        super().__init__()
        self.lm = lm
        self.chunk = chunk

    def forward(self, ids, next_only=False):
        h = self.lm.get_decoder()(input_ids=ids.unsqueeze(0)).last_hidden_state[0]
        head = self.lm.get_output_embeddings()
        if next_only:
            return torch.log_softmax(head(h[-1:]).float(), dim=-1)[0]
        return grpo.chunked_token_logprobs(h, head, ids, self.chunk)


class Policy:
    """A loaded model with its adapter and optimizer. One per trainer process (per rank
    under torchrun)."""

    def __init__(self, cfg: Load, world=None):
        import peft
        import transformers

        self.cfg = cfg
        self.world = world or parallel.World()
        torch.manual_seed(cfg.seed)
        self.device = pick_device(cfg.device)
        self.dtype = pick_dtype(cfg.dtype, self.device)
        if cfg.random is not None:
            torch.manual_seed(cfg.random.seed)
            mcfg = random_config(cfg.random)
            # built where it trains: a 4B model's random init on the CPU alone takes minutes
            with torch.device(self.device if self.world.mode != "fsdp" else "cpu"):
                base = transformers.AutoModelForCausalLM.from_config(mcfg, dtype=self.dtype)
            # a tokenizer for the export and for `logprobs` on text; a vocabulary too small for
            # one (the unit tests' 256) just has none
            self.tokenizer = byte_tokenizer(mcfg.vocab_size) if mcfg.vocab_size >= MIN_VOCAB else None
            if cfg.random.text_output:
                text_only_output(base, self.tokenizer)
        elif cfg.gguf is not None:
            # transformers dequantises a GGUF into ordinary weights (fp32 here, then dtype); it
            # needs the gguf package (requirements.lock)
            if not os.path.isfile(cfg.gguf):
                raise ConfigError(f"load.gguf: {cfg.gguf} is not a file")
            try:
                import gguf  # noqa: F401
            except ImportError as e:
                raise ConfigError(f"load.gguf needs the Python package gguf ({e}): run `frognano finetune setup` again") from e
            folder, name = os.path.split(os.path.abspath(cfg.gguf))
            base = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=self.dtype)
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
        else:
            if not os.path.isdir(cfg.model):
                raise ConfigError(f"load.model: {cfg.model} is not a folder")
            base = transformers.AutoModelForCausalLM.from_pretrained(cfg.model, dtype=self.dtype)
            self.tokenizer = load_tokenizer(cfg.model)
        if self.world.mode != "fsdp":
            base.to(self.device)  # FSDP moves each layer's shard itself: the whole may not fit
        base.config.use_cache = False
        tc = base.config.get_text_config()
        if getattr(tc, "final_logit_softcapping", None) or getattr(tc, "logit_scale", None) not in (None, 1, 1.0):
            # Scorer applies the LM head itself and would skip the scaling
            raise ConfigError(f"{type(base).__name__} scales or caps its logits, which this trainer does not apply: not supported")
        self.vocab_size = base.config.get_text_config().vocab_size
        self.arch = (base.config.architectures or [type(base).__name__])[0]
        lcfg = peft.LoraConfig(
            r=cfg.lora.rank,
            lora_alpha=cfg.lora.alpha,
            lora_dropout=cfg.lora.dropout,
            target_modules=cfg.lora.target,
            task_type="CAUSAL_LM",
        )
        self.model = peft.get_peft_model(base, lcfg)
        gc = cfg.gradient_checkpointing
        if gc is True or (gc == "auto" and self.device.type == "cuda"):
            # Non-reentrant checkpointing works with frozen inputs (LoRA) without the
            # enable_input_require_grads hack.
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            self.checkpointing = True
        else:
            self.checkpointing = False
        scorer = Scorer(self.model.get_base_model(), cfg.logprob_chunk)
        # Under FSDP the sharded model cannot be merged or saved as a whole: rank 0 keeps an
        # unsharded copy on the CPU and fills in the gathered adapter weights for an export.
        self.host = copy.deepcopy(self.model).cpu() if self.world.mode == "fsdp" and self.world.leader else None
        self.scorer = parallel.wrap(scorer, self.world, self.device, self.dtype, self.model.get_base_model().get_decoder().layers)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.stats = {"steps": 0, "tokens": 0, "train_calls": 0, "step_time_s": 0.0, "last_loss": None}

    def describe(self):
        total = sum(p.numel() for p in self.model.parameters())
        return {
            "arch": self.arch,
            "device": str(self.device),
            "dtype": str(self.dtype).removeprefix("torch."),
            "parameters": total,
            "trainable": sum(p.numel() for p in self.params),
            "vocab_size": self.vocab_size,
            "gradient_checkpointing": self.checkpointing,
            **self.world.describe(),
        }

    def logprobs(self, ids):
        """Log probabilities of ids[1:] under the current weights: (n-1,) float32."""
        return self.scorer(ids)

    def train(self, params):
        batch = Batch.parse(params, self.vocab_size)
        parallel.fault("train", self.world)
        t0 = time.monotonic()
        g = self.cfg.grpo
        rs = batch.rollouts
        adv, skipped = grpo.group_advantages([r.reward for r in rs], [r.group for r in rs], g.scale_std)
        kept = [(r, a) for r, a in zip(rs, adv) if a is not None]
        result = {"skipped_groups": skipped, "sequences": len(kept), "steps": 0, "tokens": 0,
                  "loss": None, "grad_norm": None, "clip_fraction": 0.0}
        if not kept:
            result["step_time_s"] = time.monotonic() - t0
            return result
        w = self.world
        groups = [r.group for r, _ in kept]
        ntoks = [sum(r.mask[1:]) for r, _ in kept]
        # Each minibatch (whole groups) is split across the ranks by group; every rank knows
        # the whole request, so each step's token count needs no collective. Every rank runs
        # the same number of passes per step (FSDP gathers weights in each, DDP reduces in the
        # last backward): a rank with fewer sequences pads with a masked-out dummy (None).
        plan, counts = [], [0] * w.size
        for mb in _minibatches(groups, batch.minibatches):
            by_group = {}
            for i in mb:
                by_group.setdefault(groups[i], []).append(i)
            items = list(by_group.values())
            per_rank = parallel.shares(items, [sum(len(kept[i][0].tokens) for i in it) for it in items], w.size)
            n = max(len(x) for x in per_rank)
            mine = per_rank[w.rank] + [None] * (n - len(per_rank[w.rank]))
            plan.append((mine, sum(ntoks[i] for i in mb)))
            counts = [c + len(x) for c, x in zip(counts, per_rank)]
        local = sorted(i for mine, _ in plan for i in mine if i is not None)
        npass = max(counts)
        dummy = (torch.tensor(kept[0][0].tokens[:2], device=self.device), torch.zeros(1, device=self.device), 0.0)
        seqs = {i: (torch.tensor(kept[i][0].tokens, device=self.device),
                    torch.tensor(kept[i][0].mask[1:], device=self.device), kept[i][1]) for i in local}
        # The old policy's log probabilities, recomputed here: Ollama's are the raw
        # temperature-1 distribution per text piece and moved by quantisation (notes), so
        # they cannot be the ratio's denominator.
        self.model.eval()
        old, ref = {}, {}
        with torch.no_grad():
            for i in local + [None] * (npass - len(local)):
                lp = self.logprobs(seqs[i][0] if i is not None else dummy[0])
                if i is not None:
                    old[i] = lp
            if g.kl_coef:
                with self.model.disable_adapter():
                    for i in local + [None] * (npass - len(local)):
                        lp = self.logprobs(seqs[i][0] if i is not None else dummy[0])
                        if i is not None:
                            ref[i] = lp
        self.model.train()
        # DDP and FSDP average gradients over the ranks: each rank's share of the loss is
        # multiplied by the world size so that the average is the one-process gradient.
        scale = float(w.size)
        losses, clipped, total = [], 0, 0
        for _ in range(batch.epochs):
            for mine, ntok in plan:
                self.opt.zero_grad(set_to_none=True)
                loss_val, clip_n = 0.0, 0
                for k, i in enumerate(mine):
                    ids, mask, a = seqs[i] if i is not None else dummy
                    with self._sync(last=k == len(mine) - 1):
                        lp = self.logprobs(ids)
                        if i is None:
                            loss = (lp * mask).sum()  # zero, but it reaches every weight
                        else:
                            s, c = grpo.clipped_loss_sum(
                                lp, old[i], a, mask, grpo.Clip(g.clip_low, g.clip_high),
                                g.kl_coef, ref.get(i))
                            loss = s / ntok
                            loss_val += loss.item()
                            clip_n += c
                        (loss * scale).backward()
                loss_val, clip_n = w.sum([loss_val, clip_n])
                if not torch.isfinite(torch.tensor(loss_val)):
                    self.opt.zero_grad(set_to_none=True)
                    raise FloatingPointError(f"the loss is {loss_val}; the step was not applied")
                gn = torch.nn.utils.clip_grad_norm_(self.params, g.max_grad_norm)
                self.opt.step()
                losses.append(loss_val)
                clipped += int(clip_n)
                total += ntok
                result["grad_norm"] = float(parallel.full_tensor(gn))
                result["steps"] += 1
        dt = time.monotonic() - t0
        result.update(loss=sum(losses) / len(losses), tokens=total // batch.epochs,
                      clip_fraction=clipped / total, step_time_s=dt)
        self.stats["steps"] += result["steps"]
        self.stats["tokens"] += result["tokens"]
        self.stats["train_calls"] += 1
        self.stats["step_time_s"] += dt
        self.stats["last_loss"] = result["loss"]
        return result

    def _sync(self, last):
        """DDP reduces gradients in a backward only where this says so: the last pass of a
        step; the others accumulate locally. FSDP reduce-scatters every backward (it keeps
        no unsharded gradients to accumulate into)."""
        if self.world.mode == "ddp" and not last:
            return self.scorer.no_sync()
        return contextlib.nullcontext()

    def _whole(self):
        """The peft model with its current adapter, unsharded, on rank 0 (None elsewhere).
        Collective under FSDP: every rank gathers the adapter's shards."""
        if self.world.mode != "fsdp":
            return self.model if self.world.leader else None
        full = {n: parallel.full_tensor(p.detach()) for n, p in self.model.named_parameters() if p.requires_grad}
        if not self.world.leader:
            return None
        with torch.no_grad():
            for n, p in self.host.named_parameters():
                if n in full:
                    p.copy_(full[n].to(p.dtype).cpu())
        return self.host

    def save(self, path):
        m = self._whole()
        if m is None:
            return {}  # rank 0 writes; another rank's answer is not sent
        os.makedirs(path, exist_ok=True)
        m.save_pretrained(path)
        return {"path": path, "files": sorted(os.listdir(path))}

    def merge_export(self, path, dtype="bfloat16"):
        from .export import merge_export

        m = self._whole()
        if m is None:
            return {}
        return merge_export(m, path, dtype, self.tokenizer)

    def next_token_logprobs(self, params):
        """The `logprobs` request: the top_k next tokens after a sequence, with their log
        probabilities under the current weights (the adapter included, i.e. what a merged
        export computes), in fp32 whatever the training dtype."""
        allowed = {"tokens", "text", "messages", "top_k"}
        if set(params) - allowed:
            raise ConfigError(f"logprobs: unknown field {sorted(set(params) - allowed)[0]}")
        given = [k for k in ("tokens", "text", "messages") if k in params]
        if len(given) != 1:
            raise ConfigError("logprobs needs exactly one of tokens, text and messages")
        k = params.get("top_k", 5)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
            raise ConfigError("logprobs.top_k must be an integer in [1, 100]")
        tok = self.tokenizer
        if given[0] != "tokens" and tok is None:
            raise ConfigError(f"logprobs.{given[0]} needs a tokenizer, and this model has no tokenizer: send tokens")
        if "tokens" in params:
            ids = params["tokens"]
            if not isinstance(ids, list) or not ids or any(
                    isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < self.vocab_size for t in ids):
                raise ConfigError(f"logprobs.tokens must be a non-empty list of token ids below {self.vocab_size}")
        elif "text" in params:
            if not isinstance(params["text"], str) or not params["text"]:
                raise ConfigError("logprobs.text must be a non-empty string")
            ids = tok(params["text"], add_special_tokens=True)["input_ids"]
        else:
            msgs = params["messages"]
            if not isinstance(msgs, list) or not all(
                    isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                    for m in msgs):
                raise ConfigError("logprobs.messages must be a list of {role, content} strings")
            ids = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
            if not isinstance(ids, list):  # transformers 5 answers a BatchEncoding
                ids = ids["input_ids"]
        self.model.eval()
        with torch.no_grad():
            lp = self.scorer(torch.tensor(ids, device=self.device), next_only=True)
        vals, idx = lp.topk(min(k, lp.numel()))
        top = []
        for v, i in zip(vals.tolist(), idx.tolist()):
            e = {"id": i, "logprob": v}
            if tok is not None:
                e["token"] = tok.decode([i])
                e["bytes"] = list(token_bytes(tok, i))
            top.append(e)
        return {"tokens": list(ids), "top": top}

    def metrics(self, digest=False):
        m = dict(self.stats)
        if self.device.type == "cuda":
            m["peak_memory_bytes"] = torch.cuda.max_memory_allocated(self.device)
        if digest:
            m["adapter_digest"] = self.adapter_digest()
        return m

    def adapter_digest(self):
        """sha256 of this rank's adapter weights as it holds them (under FSDP: its shards),
        in parameter order: equal digests on every DDP rank prove the ranks in step."""
        h = hashlib.sha256()
        for n, p in self.model.named_parameters():
            if p.requires_grad:
                t = p.detach()
                t = t.to_local() if hasattr(t, "to_local") else t
                h.update(n.encode())
                h.update(t.float().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()


def _minibatches(groups, n):
    """Splits rollout indices into n minibatches without splitting a group: a group's
    advantages only mean something together."""
    by_group = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    gs = list(by_group.values())
    n = min(n, len(gs))
    out = [[] for _ in range(n)]
    for k, idx in enumerate(gs):
        out[k % n].extend(idx)
    return out
