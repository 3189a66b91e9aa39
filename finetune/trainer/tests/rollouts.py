"""Shared helpers: tiny batches of rollouts for random models (vocabulary 256)."""

import random


def rollout(group, reward, n=24, prompt=8, seed=0):
    rng = random.Random(seed)
    tokens = [rng.randrange(256) for _ in range(n)]
    # prompt, then an assistant span, a tool result (masked) and another assistant span
    mask = [0] * prompt + [1] * 6 + [0] * 4 + [1] * (n - prompt - 10)
    return {"tokens": tokens, "mask": mask, "reward": reward, "group": group}


def batch(**kw):
    rs = [rollout("solved-half", r, seed=i) for i, r in enumerate([1, 0, 1, 0])]
    rs += [rollout("always-solved", 1, seed=10 + i) for i in range(2)]
    return {"rollouts": rs, **kw}
