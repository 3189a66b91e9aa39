"""The tokenize request and text-only random models (encode.py, tokenizer.text_only_output)."""

import pytest
import torch

from frognano_trainer.config import ConfigError, Load
from frognano_trainer.encode import Encoder, tokenize
from frognano_trainer.tokenizer import IM_END, byte_tokenizer


@pytest.fixture(scope="module")
def enc():
    return Encoder(byte_tokenizer(320))


def test_texts_whole_and_pieces_as_the_model_produced_them(enc):
    r = tokenize(enc, {"texts": ["<|im_start|>user\nthe end<|im_end|>\n"],
                       "pieces": [["th", "t", "h", "é", "\n", IM_END, "xyz"]]})
    t = r["texts"][0]
    assert t[0] == 257 and t[-2] == 258 and t[-1] == 10  # control tokens parsed, "\n" a byte
    assert enc.tok.convert_tokens_to_ids("th") in t  # a merge inside a whole text
    th = enc.tok.convert_tokens_to_ids("th")
    # "t","h" are the model's own two tokens, not the merge the tokenizer would choose; "é" is
    # two bytes (no single token spells it); "xyz" is three tokens
    assert r["pieces"][0] == [th, ord("t"), ord("h"), -1, 10, 258, -1]


def test_invalid(enc):
    with pytest.raises(ConfigError, match="tokenize.texts"):
        tokenize(enc, {"texts": "x"})
    with pytest.raises(ConfigError, match="tokenize.pieces"):
        tokenize(enc, {"pieces": ["x"]})
    with pytest.raises(ConfigError, match="unknown"):
        tokenize(enc, {"text": "x"})
    with pytest.raises(ConfigError, match="no"):
        tokenize(None, {"texts": ["x"]})


def test_text_only_random_model_generates_text():
    from frognano_trainer.model import Policy

    cfg = Load.parse({"random": {"arch": "llama", "vocab_size": 320, "initializer_range": 0.2,
                                 "text_output": True}, "device": "cpu"})
    p = Policy(cfg)
    ids = torch.tensor(p.tokenizer("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n")["input_ids"])
    with torch.no_grad():
        probs = torch.softmax(p.model(input_ids=ids.unsqueeze(0)).logits[0], -1)
    text = set(range(0x20, 0x7F)) | {10, 258} | set(range(259, 265))
    other = [i for i in range(320) if i not in text]
    # at every position, the tokens that are not text have almost no probability together
    assert probs[:, other].sum(-1).max() < 1e-4
