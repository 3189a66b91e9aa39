"""The arithmetic of GRPO, free of models so that tests can check it by hand.

Advantages are group-relative (a task's rollouts compared with each other); the objective is
PPO's clipped ratio, summed over the assistant's own tokens only and divided by the number of
such tokens in the whole optimizer step (token-level normalisation, as in DAPO: long answers
are not down-weighted per token the way a per-sequence mean would).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.utils.checkpoint


def group_advantages(rewards, groups, scale_std=False, eps=1e-6):
    """Returns (advantages, skipped) for rollouts given as parallel lists.

    A rollout's advantage is its reward minus its group's mean, divided by the group's
    sample standard deviation when scale_std is set (GRPO's original form; Dr. GRPO showed
    the division biases towards easy and hard tasks, hence off by default). A group whose
    rewards are all equal (a single rollout included) teaches nothing and only adds noise
    to the normalisation: its rollouts get advantage None and its id is listed in skipped,
    in order of first appearance.
    """
    if len(rewards) != len(groups):
        raise ValueError("rewards and groups differ in length")
    members = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    adv = [None] * len(rewards)
    skipped = []
    for g, idx in members.items():
        rs = [float(rewards[i]) for i in idx]
        if max(rs) - min(rs) <= eps:
            skipped.append(g)
            continue
        mean = sum(rs) / len(rs)
        scale = 1.0
        if scale_std:
            var = sum((r - mean) ** 2 for r in rs) / (len(rs) - 1)
            scale = math.sqrt(var) + eps
        for i in idx:
            adv[i] = (float(rewards[i]) - mean) / scale
    return adv, skipped


def token_logprobs(logits, tokens):
    """Log probability of each token given the ones before it.

    logits: (n, vocab) for a sequence of n tokens; returns (n-1,) in float32 for tokens[1:].
    Computed in float32 whatever the model's dtype: bf16 log-softmax loses the small ratio
    differences the clip is about.
    """
    return -torch.nn.functional.cross_entropy(
        logits[:-1].float(), tokens[1:], reduction="none"
    )


def chunked_token_logprobs(hidden, head, tokens, chunk):
    """token_logprobs from the decoder's last hidden states, the LM head applied to chunk
    positions at a time.

    hidden: (n, d) for a sequence of n tokens; head: the output projection; returns (n-1,)
    float32 for tokens[1:]. Under autograd each chunk is checkpointed: its logits (chunk x
    vocabulary, in the model's dtype and again in float32) are freed after the forward and
    recomputed in the backward, so at most one chunk's logits exist at a time, instead of a
    whole sequence's (8k tokens x a 248k vocabulary: 8 GB in float32 for each copy).
    """
    h, t = hidden[:-1], tokens[1:]
    if h.shape[0] <= chunk:
        return _head_logprobs(head, h, t)
    parts = []
    for s in range(0, h.shape[0], chunk):
        hs, ts = h[s:s + chunk], t[s:s + chunk]
        if torch.is_grad_enabled() and hs.requires_grad:
            parts.append(torch.utils.checkpoint.checkpoint(_head_logprobs, head, hs, ts, use_reentrant=False))
        else:
            parts.append(_head_logprobs(head, hs, ts))
    return torch.cat(parts)


def _head_logprobs(head, h, t):
    return -torch.nn.functional.cross_entropy(head(h).float(), t, reduction="none")


@dataclass
class Clip:
    low: float = 0.2
    high: float = 0.2


def clipped_loss_sum(logp, old_logp, advantage, mask, clip=Clip(), kl_coef=0.0, ref_logp=None):
    """Sum over the masked tokens of the negative clipped objective (plus the KL penalty).

    logp, old_logp, ref_logp: (n-1,) log probabilities of tokens[1:]; mask: (n-1,) booleans,
    True for the assistant's own tokens (the caller drops mask[0], which nothing predicts).
    Returns (loss_sum, clipped_tokens): the caller divides by the step's token count.

    Per token: ratio = exp(logp - old_logp);
    objective = min(ratio * A, clamp(ratio, 1 - low, 1 + high) * A).
    KL (Schulman's k3 estimator against the reference, i.e. the base model without the
    adapter): exp(ref - logp) - (ref - logp) - 1, always >= 0.
    """
    mask = mask.to(logp.dtype)
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * advantage
    clipped = torch.clamp(ratio, 1.0 - clip.low, 1.0 + clip.high) * advantage
    per_token = -torch.minimum(unclipped, clipped)
    if kl_coef:
        if ref_logp is None:
            raise ValueError("kl_coef is set but no reference log probabilities were given")
        d = ref_logp - logp
        per_token = per_token + kl_coef * (torch.exp(d) - d - 1.0)
    clipped_tokens = int(((clipped < unclipped).to(mask.dtype) * mask).sum().item())
    return (per_token * mask).sum(), clipped_tokens
