"""Tokenizers: the umT5 SentencePiece-unigram vocabulary (pure Python), and a byte tokenizer
for the tiny test config (which has no trained vocabulary)."""
import json
import os
import re
import unicodedata
from typing import List

EOS_ID = 1


def _clean(text: str) -> str:
    # The model authors collapse runs of whitespace before tokenizing.
    return re.sub(r"\s+", " ", text).strip()


class ByteTokenizer:
    """UTF-8 bytes shifted past the special ids (0 pad, 1 eos, 2 unk), then eos."""
    vocab_size = 259

    def __init__(self, max_len=512):
        self.max_len = max_len

    def __call__(self, text: str) -> List[int]:
        ids = [b + 3 for b in _clean(text).encode("utf-8")][: self.max_len - 1]
        return ids + [EOS_ID]


class UnigramTokenizer:
    """SentencePiece unigram segmentation (Viterbi over piece log-probs) from tokenizer.json.

    NFKC stands in for the precompiled SentencePiece normalizer; it agrees on ordinary text."""

    def __init__(self, tokenizer_json: str, max_len=512):
        with open(tokenizer_json, encoding="utf-8") as f:
            spec = json.load(f)
        model = spec["model"]
        if model.get("type") != "Unigram":
            raise ValueError(f"{tokenizer_json}: expected a Unigram model, got {model.get('type')}")
        self.max_len = max_len
        self.unk_id = model.get("unk_id", 2)
        self.pieces = {p: (i, s) for i, (p, s) in enumerate(model["vocab"])}
        self.max_piece = max(len(p) for p in self.pieces)
        self.byte_fallback = bool(model.get("byte_fallback"))
        self.eos_id = EOS_ID
        for tok in spec.get("added_tokens", []):
            if tok.get("content") == "</s>":
                self.eos_id = tok["id"]

    def _segment(self, s: str) -> List[int]:
        n = len(s)
        best = [(-1e30, -1, -1)] * (n + 1)  # (score, start, id)
        best[0] = (0.0, -1, -1)
        for end in range(1, n + 1):
            for start in range(max(0, end - self.max_piece), end):
                hit = self.pieces.get(s[start:end])
                if hit is None or best[start][0] <= -1e29:
                    continue
                score = best[start][0] + hit[1]
                if score > best[end][0]:
                    best[end] = (score, start, hit[0])
            if best[end][0] <= -1e29:  # no piece ends here: one unknown character
                best[end] = (best[end - 1][0] - 100.0, end - 1, None)
        ids, end = [], n
        while end > 0:
            _, start, pid = best[end]
            if pid is None:
                ids.extend(reversed(self._unknown(s[start:end])))
            else:
                ids.append(pid)
            end = start
        return ids[::-1]

    def _unknown(self, ch: str) -> List[int]:
        if self.byte_fallback:
            out = [self.pieces.get(f"<0x{b:02X}>", (self.unk_id, 0))[0] for b in ch.encode("utf-8")]
            return out
        return [self.unk_id]

    def __call__(self, text: str) -> List[int]:
        s = "\u2581" + unicodedata.normalize("NFKC", _clean(text)).replace(" ", "\u2581")
        return self._segment(s)[: self.max_len - 1] + [self.eos_id]


def load_tokenizer(path: str, max_len=512):
    """umT5 tokenizer from a folder holding tokenizer.json (the published google/umt5-xxl)."""
    tj = os.path.join(path, "tokenizer.json")
    if not os.path.exists(tj):
        raise FileNotFoundError(f"tokenizer not found: expected {tj}")
    return UnigramTokenizer(tj, max_len)
