"""Tokenizers for the trainer's models, and the tokenizer files an Ollama import needs.

A random test model gets a byte-level tokenizer built here (nothing is downloaded): the 256
byte tokens in GPT-2's byte-to-unicode spelling, ChatML's control tokens, a few merges of
letter pairs, and reserved control tokens up to the model's vocabulary size. A text is one
token per UTF-8 byte but for those pairs, under any pre-tokenizer, so Ollama and
transformers cannot tokenize a plain text differently. A folder model brings its own tokenizer.

Ollama 0.17.4's converter needs `tokenizer.json` ("unknown tokenizer format" without it) and
reads the chat template and the stop token (`eos_token`) only from `tokenizer_config.json`;
transformers 5 writes the template into `chat_template.jinja` instead, so it is copied in.
"""

from __future__ import annotations

import json
import os

from .config import ConfigError

IM_START, IM_END, EOT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
SPECIALS = (EOT, IM_START, IM_END)
# A few merges of two lowercase letters (llama.cpp refuses a BPE vocabulary without merges).
# They never span a pre-tokenizer boundary, so any pre-tokenizer splits a text the same way.
MERGES = (("t", "h"), ("i", "n"), ("e", "r"), ("a", "n"), ("o", "n"), ("r", "e"))
# The smallest vocabulary a byte tokenizer fits in.
MIN_VOCAB = 256 + len(SPECIALS) + len(MERGES)

# ChatML, as a Jinja template (transformers) and as the Go template Ollama registers for it.
CHATML_JINJA = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _bytes_to_unicode():
    """GPT-2's reversible map from bytes to printable characters (byte-level BPE)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_TO_CHAR = _bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def token_bytes(tokenizer, i):
    """The bytes token i stands for: byte-level pieces mapped back, others as UTF-8."""
    piece = tokenizer.convert_ids_to_tokens(i)
    if piece and all(c in CHAR_TO_BYTE for c in piece) and i not in tokenizer.all_special_ids:
        return bytes(CHAR_TO_BYTE[c] for c in piece)
    return tokenizer.decode([i]).encode()


def byte_tokenizer(vocab_size):
    """A transformers fast tokenizer of exactly vocab_size tokens, with ChatML's template."""
    if vocab_size < MIN_VOCAB:
        raise ConfigError(f"a byte tokenizer needs a vocabulary of at least {MIN_VOCAB} tokens, not {vocab_size}")
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {BYTE_TO_CHAR[b]: b for b in range(256)}
    vocab.update({s: 256 + i for i, s in enumerate(SPECIALS)})  # ids 256.. (model.py relies on it)
    for a, b in MERGES:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=list(MERGES)))
    # No Split pre-tokenizer: Ollama hashes Split regexes to pick its pre-tokenizer, and an
    # empty set is the one it accepts without a warning ("default").
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    extra = [f"<|reserved_{i}|>" for i in range(vocab_size - MIN_VOCAB)]
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in (*SPECIALS, *extra)])
    t = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=IM_END, pad_token=EOT)
    t.chat_template = CHATML_JINJA
    assert len(t) == vocab_size, (len(t), vocab_size)
    return t


def text_only_output(model, tokenizer, scale=6.0):
    """Makes a random model generate text only: printable ASCII, newlines and <|im_end|>.

    A random model samples byte tokens that are not whole UTF-8 about half the time; Ollama
    reports such pieces as U+FFFD, their bytes lost, so no rollout of it could be rebuilt
    token by token. The output rows of every other token are zeroed (logit 0) and the text
    tokens' rows scaled up (logits of std about 6 x 0.2 x sqrt(hidden)), so the best text
    token outweighs all the others together by orders of magnitude at every position.
    """
    import torch

    if tokenizer is None:
        raise ConfigError("load.random.text_output needs the byte tokenizer (vocab_size >= %d)" % MIN_VOCAB)
    keep = [b for b in range(256) if 0x20 <= b < 0x7F or b == 0x0A]
    keep += [256 + SPECIALS.index(IM_END)] + [tokenizer.convert_tokens_to_ids(a + b) for a, b in MERGES]
    w = model.get_output_embeddings().weight
    with torch.no_grad():
        mask = torch.zeros(w.shape[0], dtype=torch.bool, device=w.device)
        mask[keep] = True
        w[~mask] = 0
        w[mask] *= scale


def load_tokenizer(folder):
    """The tokenizer saved with a model folder, or None when it has none."""
    if not any(os.path.exists(os.path.join(folder, f)) for f in ("tokenizer.json", "tokenizer.model")):
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def write_for_ollama(tokenizer, path):
    """Saves tokenizer into the folder path as Ollama's converter reads it; returns problems."""
    tokenizer.save_pretrained(path)
    problems = []
    if not os.path.exists(os.path.join(path, "tokenizer.json")):
        problems.append("no tokenizer.json (Ollama: unknown tokenizer format)")
    cp = os.path.join(path, "tokenizer_config.json")
    with open(cp) as f:
        cfg = json.load(f)
    jp = os.path.join(path, "chat_template.jinja")
    if "chat_template" not in cfg and os.path.exists(jp):
        with open(jp) as f:
            cfg["chat_template"] = f.read()
    if not cfg.get("chat_template") and getattr(tokenizer, "chat_template", None):
        cfg["chat_template"] = tokenizer.chat_template
    if not cfg.get("chat_template"):
        problems.append("tokenizer_config.json has no chat_template")
    if not cfg.get("eos_token") and tokenizer.eos_token:
        cfg["eos_token"] = tokenizer.eos_token
    if not cfg.get("eos_token"):
        problems.append("tokenizer_config.json has no eos_token (Ollama would not know when to stop)")
    with open(cp, "w") as f:
        json.dump(cfg, f, indent=2)
    return problems
