"""The `tokenize` request: a rollout's texts and output pieces as the model's token ids.

The Go side (finetune/rollout) renders each turn's prompt exactly as Ollama rendered it and
takes the model's output from the per-token pieces Ollama recorded with the rollout. Here
both become token ids: a prompt is tokenized whole, as Ollama tokenizes it (the tokenizer's
special tokens are parsed and added as it adds them); an output piece is the one token it is
the text of, so the ids are the model's own tokens, not a re-tokenization of its text (a
model may produce a tokenization the tokenizer would never choose).
"""

from __future__ import annotations

from .config import ConfigError, _take
from .tokenizer import token_bytes


class Encoder:
    """Token ids for texts and pieces under one tokenizer. The map from a piece's bytes to
    its token is built on first use (one pass over the vocabulary)."""

    def __init__(self, tokenizer):
        self.tok = tokenizer
        self._by_bytes = None

    def text(self, s, add_special_tokens=True):
        return list(self.tok(s, add_special_tokens=add_special_tokens)["input_ids"])

    def piece(self, s):
        """The id of the one token whose text is s, or -1 when no single token spells it."""
        ids = self.tok(s, add_special_tokens=False)["input_ids"]
        if len(ids) == 1 and token_bytes(self.tok, ids[0]) == s.encode():
            return ids[0]
        if self._by_bytes is None:
            m = {}
            for i in range(len(self.tok)):
                m.setdefault(token_bytes(self.tok, i), i)
            self._by_bytes = m
        return self._by_bytes.get(s.encode(), -1)


def tokenize(encoder, params):
    """texts: list of strings (each tokenized whole); pieces: list of lists of strings (one
    token each); add_special_tokens (default true) for the texts. Answers the same shapes
    with ids; a piece that is no single token's text is -1."""
    if encoder is None:
        raise ConfigError("tokenize needs a tokenizer, and this model has none")
    p = _take(params, "tokenize", ("texts", "pieces", "add_special_tokens"))
    texts, pieces = p.get("texts", []), p.get("pieces", [])
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ConfigError("tokenize.texts must be a list of strings")
    if not isinstance(pieces, list) or not all(
            isinstance(ps, list) and all(isinstance(s, str) for s in ps) for ps in pieces):
        raise ConfigError("tokenize.pieces must be a list of lists of strings")
    special = p.get("add_special_tokens", True)
    if not isinstance(special, bool):
        raise ConfigError("tokenize.add_special_tokens must be true or false")
    return {
        "texts": [encoder.text(t, special) for t in texts],
        "pieces": [[encoder.piece(s) for s in ps] for ps in pieces],
    }
