"""The algorithm's arithmetic, checked against numbers worked out by hand."""

import math

import pytest
import torch

from frognano_trainer import grpo


def test_advantages_are_reward_minus_group_mean():
    adv, skipped = grpo.group_advantages([1, 0, 0, 1, 0.5, 0.25], ["a", "a", "a", "a", "b", "b"])
    assert adv[:4] == [0.5, -0.5, -0.5, 0.5]
    assert adv[4:] == pytest.approx([0.125, -0.125])
    assert skipped == []


def test_equal_reward_groups_are_skipped():
    adv, skipped = grpo.group_advantages([1, 1, 0, 1, 0.3], ["same", "same", "mixed", "mixed", "alone"])
    assert adv == [None, None, -0.5, 0.5, None]
    assert skipped == ["same", "alone"]


def test_std_scaling_uses_the_sample_std():
    # rewards 0, 0, 1, 1: mean 0.5, sample variance (4 * 0.25) / 3 = 1/3
    adv, _ = grpo.group_advantages([0, 0, 1, 1], [7, 7, 7, 7], scale_std=True)
    s = math.sqrt(1 / 3)
    assert adv == pytest.approx([-0.5 / s, -0.5 / s, 0.5 / s, 0.5 / s], rel=1e-5)


def test_advantages_reject_mismatched_lists():
    with pytest.raises(ValueError):
        grpo.group_advantages([1, 0], ["a"])


def test_token_logprobs_score_each_token_from_the_one_before():
    # vocabulary of 3; position i's logits predict token i+1
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]]))
    tokens = torch.tensor([2, 1, 2])
    lp = grpo.token_logprobs(logits, tokens)
    assert lp.tolist() == pytest.approx([math.log(0.25), math.log(0.8)], rel=1e-6)


def L(*ps):
    return torch.log(torch.tensor(ps, dtype=torch.float32))


def test_clipped_objective_by_hand():
    # ratios 0.6/0.4 = 1.5 and 0.3/0.3 = 1; clip 0.2.
    logp, old = L(0.6, 0.3), L(0.4, 0.3)
    mask = torch.tensor([True, True])
    # A = +1: token 1 is clipped to 1.2, token 2 gives 1 -> loss -(1.2 + 1)
    s, c = grpo.clipped_loss_sum(logp, old, 1.0, mask)
    assert s.item() == pytest.approx(-2.2, rel=1e-6) and c == 1
    # A = -1: min(-1.5, -1.2) = -1.5 (the pessimistic side is kept, not clipped) -> 1.5 + 1
    s, c = grpo.clipped_loss_sum(logp, old, -1.0, mask)
    assert s.item() == pytest.approx(2.5, rel=1e-6) and c == 0
    # ratio 0.5, below 1 - 0.2: for A < 0, min(-0.5, -0.8) = -0.8 is the clipped side
    s, c = grpo.clipped_loss_sum(L(0.2), L(0.4), -1.0, torch.tensor([True]))
    assert s.item() == pytest.approx(0.8, rel=1e-6) and c == 1
    s, c = grpo.clipped_loss_sum(L(0.2), L(0.4), 1.0, torch.tensor([True]))
    assert s.item() == pytest.approx(-0.5, rel=1e-6) and c == 0
    # asymmetric clip (DAPO's clip-higher): 1.5 is clipped to 1.3
    s, _ = grpo.clipped_loss_sum(L(0.6), L(0.4), 1.0, torch.tensor([True]), grpo.Clip(0.2, 0.3))
    assert s.item() == pytest.approx(-1.3, rel=1e-6)


def test_clipped_tokens_carry_no_gradient():
    logp = L(0.6, 0.3).requires_grad_()
    s, _ = grpo.clipped_loss_sum(logp, L(0.4, 0.3), 1.0, torch.tensor([True, True]))
    s.backward()
    # d/dlogp of -ratio*A is -ratio*A: 0 for the clipped token, -1 for the other
    assert logp.grad.tolist() == pytest.approx([0.0, -1.0])


def test_masked_tokens_do_not_count():
    logp, old = L(0.6, 0.3), L(0.4, 0.3)
    mask = torch.tensor([False, True])
    s, _ = grpo.clipped_loss_sum(logp, old, 1.0, mask)
    assert s.item() == pytest.approx(-1.0)
    # whatever the masked token's probability, nothing changes, not even its gradient
    logp2 = L(0.01, 0.3).requires_grad_()
    s2, _ = grpo.clipped_loss_sum(logp2, old, 1.0, mask)
    s2.backward()
    assert s2.item() == pytest.approx(-1.0) and logp2.grad[0].item() == 0.0


def test_kl_penalty_is_k3_against_the_reference():
    # ref 0.5, policy 0.25: d = log 2, k3 = 2 - log 2 - 1; ratio 1 and A = 0 isolate it
    s, _ = grpo.clipped_loss_sum(L(0.25), L(0.25), 0.0, torch.tensor([True]), kl_coef=0.1, ref_logp=L(0.5))
    assert s.item() == pytest.approx(0.1 * (1 - math.log(2)), rel=1e-5)
    with pytest.raises(ValueError):
        grpo.clipped_loss_sum(L(0.25), L(0.25), 0.0, torch.tensor([True]), kl_coef=0.1)


@pytest.mark.parametrize("chunk", [1, 3, 7, 100])
def test_chunked_logprobs_equal_unchunked_with_their_gradients(chunk):
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 50, bias=False)
    tokens = torch.randint(0, 50, (12,))
    h1 = torch.randn(12, 16, requires_grad=True)
    h2 = h1.detach().clone().requires_grad_(True)
    want = grpo.token_logprobs(head(h1), tokens)
    got = grpo.chunked_token_logprobs(h2, head, tokens, chunk)
    assert torch.allclose(got, want, atol=1e-6)
    w = torch.randn(11)
    (want * w).sum().backward()
    gw = head.weight.grad.clone()
    head.weight.grad = None
    (got * w).sum().backward()
    assert torch.allclose(h2.grad, h1.grad, atol=1e-6)
    assert torch.allclose(head.weight.grad, gw, atol=1e-5)


def test_chunked_logprobs_keep_no_whole_sequence_logits():
    # what autograd saves for the backward: unchunked, the (n, vocab) logits; chunked and
    # checkpointed, only each chunk's inputs
    torch.manual_seed(0)
    n, vocab, chunk = 64, 1000, 8
    head = torch.nn.Linear(16, vocab, bias=False)
    tokens = torch.randint(0, vocab, (n,))
    h = torch.randn(n, 16, requires_grad=True)

    def biggest_saved(fn):
        sizes = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: sizes.append(t.numel()) or t, lambda t: t):
            fn()
        return max(sizes)

    assert biggest_saved(lambda: grpo.token_logprobs(head(h), tokens)) >= (n - 1) * vocab
    assert biggest_saved(lambda: grpo.chunked_token_logprobs(h, head, tokens, chunk)) <= vocab * 16
