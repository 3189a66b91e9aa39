"""The policy: a causal LM with a LoRA adapter on all linear layers, and one GRPO update.

Imports of torch, transformers and peft happen here, not in protocol.py, so that the
protocol answers a malformed line even when the environment is broken.
"""

from __future__ import annotations

import logging
import os
import time

import torch

from . import grpo
from .config import Batch, ConfigError, Load
from .tokenizer import EOT, IM_END, MIN_VOCAB, SPECIALS, byte_tokenizer, load_tokenizer, token_bytes

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
    """A tiny transformers config of the asked architecture (nothing is downloaded)."""
    common = dict(
        vocab_size=r.vocab_size,
        hidden_size=r.hidden_size,
        intermediate_size=r.intermediate_size,
        num_hidden_layers=r.num_hidden_layers,
        num_attention_heads=r.num_attention_heads,
        num_key_value_heads=r.num_key_value_heads,
        max_position_embeddings=4096,
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


class Policy:
    """A loaded model with its adapter and optimizer. One per trainer process."""

    def __init__(self, cfg: Load):
        import peft
        import transformers

        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        self.device = pick_device(cfg.device)
        self.dtype = pick_dtype(cfg.dtype, self.device)
        if cfg.random is not None:
            torch.manual_seed(cfg.random.seed)
            mcfg = random_config(cfg.random)
            base = transformers.AutoModelForCausalLM.from_config(mcfg, dtype=self.dtype)
            # a tokenizer for the export and for `logprobs` on text; a vocabulary too small for
            # one (the unit tests' 256) just has none
            self.tokenizer = byte_tokenizer(mcfg.vocab_size) if mcfg.vocab_size >= MIN_VOCAB else None
        else:
            if not os.path.isdir(cfg.model):
                raise ConfigError(f"load.model: {cfg.model} is not a folder")
            base = transformers.AutoModelForCausalLM.from_pretrained(cfg.model, dtype=self.dtype)
            self.tokenizer = load_tokenizer(cfg.model)
        base.to(self.device)
        base.config.use_cache = False
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
        }

    def logprobs(self, ids):
        out = self.model(input_ids=ids.unsqueeze(0))
        return grpo.token_logprobs(out.logits[0], ids)

    def train(self, params):
        batch = Batch.parse(params, self.vocab_size)
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
        seqs = [(torch.tensor(r.tokens, device=self.device),
                 torch.tensor(r.mask[1:], device=self.device), a) for r, a in kept]
        # The old policy's log probabilities, recomputed here: Ollama's are the raw
        # temperature-1 distribution per text piece and moved by quantisation (notes), so
        # they cannot be the ratio's denominator.
        self.model.eval()
        with torch.no_grad():
            old = [self.logprobs(ids) for ids, _, _ in seqs]
            ref = None
            if g.kl_coef:
                with self.model.disable_adapter():
                    ref = [self.logprobs(ids) for ids, _, _ in seqs]
        self.model.train()
        order = _minibatches([r.group for r, _ in kept], batch.minibatches)
        losses, clipped, total = [], 0, 0
        for _ in range(batch.epochs):
            for mb in order:
                ntok = sum(int(seqs[i][1].sum()) for i in mb)
                self.opt.zero_grad(set_to_none=True)
                loss_val = 0.0
                for i in mb:
                    ids, mask, a = seqs[i]
                    lp = self.logprobs(ids)
                    s, c = grpo.clipped_loss_sum(
                        lp, old[i], a, mask, grpo.Clip(g.clip_low, g.clip_high),
                        g.kl_coef, ref[i] if ref else None)
                    loss = s / ntok
                    loss.backward()
                    loss_val += loss.item()
                    clipped += c
                if not torch.isfinite(torch.tensor(loss_val)):
                    self.opt.zero_grad(set_to_none=True)
                    raise FloatingPointError(f"the loss is {loss_val}; the step was not applied")
                gn = torch.nn.utils.clip_grad_norm_(self.params, g.max_grad_norm)
                self.opt.step()
                losses.append(loss_val)
                total += ntok
                result["grad_norm"] = float(gn)
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

    def save(self, path):
        os.makedirs(path, exist_ok=True)
        self.model.save_pretrained(path)
        return {"path": path, "files": sorted(os.listdir(path))}

    def merge_export(self, path, dtype="bfloat16"):
        from .export import merge_export

        return merge_export(self.model, path, dtype, self.tokenizer)

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
        x = torch.tensor(ids, device=self.device).unsqueeze(0)
        with torch.no_grad():
            logits = self.model(input_ids=x).logits[0, -1].float()
        lp = torch.log_softmax(logits, dim=-1)
        vals, idx = lp.topk(min(k, lp.numel()))
        top = []
        for v, i in zip(vals.tolist(), idx.tolist()):
            e = {"id": i, "logprob": v}
            if tok is not None:
                e["token"] = tok.decode([i])
                e["bytes"] = list(token_bytes(tok, i))
            top.append(e)
        return {"tokens": list(ids), "top": top}

    def metrics(self):
        m = dict(self.stats)
        if self.device.type == "cuda":
            m["peak_memory_bytes"] = torch.cuda.max_memory_allocated(self.device)
        return m


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
