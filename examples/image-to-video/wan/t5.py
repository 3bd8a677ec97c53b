"""umT5 encoder (text side of the model). Names follow models_t5_umt5-xxl-enc-bf16.pth."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import T5Config
from .norm import RMSNorm


class T5LayerNorm(RMSNorm):
    """T5's norm: the normalised activations take the weight's dtype (as the published encoder does)."""

    def _out_dtype(self, x):
        return self.weight.dtype


class T5Attention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim, bias=False) for _ in range(4))

    def forward(self, x, bias):
        n = self.num_heads
        q, k, v = (f(x).unflatten(-1, (n, -1)).transpose(1, 2) for f in (self.q, self.k, self.v))
        # T5 does not scale scores by 1/sqrt(d): the scale is folded into the weights.
        s = torch.matmul(q.float(), k.float().transpose(-1, -2)) + bias
        out = torch.matmul(s.softmax(-1).to(v.dtype), v)
        return self.o(out.transpose(1, 2).flatten(2))


class T5FeedForward(nn.Module):
    """Gated GELU: fc2(fc1(x) · gelu_tanh(gate(x)))."""

    def __init__(self, dim, ffn_dim):
        super().__init__()
        self.gate = nn.Sequential(nn.Linear(dim, ffn_dim, bias=False), nn.GELU(approximate="tanh"))
        self.fc1 = nn.Linear(dim, ffn_dim, bias=False)
        self.fc2 = nn.Linear(ffn_dim, dim, bias=False)

    def forward(self, x):
        return self.fc2(self.fc1(x) * self.gate(x))


class RelativeBias(nn.Module):
    """Bidirectional bucketed relative position bias (one table per layer in umT5)."""

    def __init__(self, num_buckets, num_heads, max_distance):
        super().__init__()
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.embedding = nn.Embedding(num_buckets, num_heads)

    def buckets(self, rel: torch.Tensor) -> torch.Tensor:
        half = self.num_buckets // 2
        out = (rel > 0).long() * half
        rel = rel.abs()
        exact = half // 2
        # Distances beyond `exact` share log-spaced buckets up to max_distance.
        large = exact + (torch.log(rel.float().clamp(min=1) / exact)
                         / math.log(self.max_distance / exact) * (half - exact)).long()
        large = large.clamp(max=half - 1)
        return out + torch.where(rel < exact, rel, large)

    def forward(self, lq, lk, device):
        pos = torch.arange(lk, device=device)[None, :] - torch.arange(lq, device=device)[:, None]
        return self.embedding(self.buckets(pos)).permute(2, 0, 1).unsqueeze(0).float()


class T5Block(nn.Module):
    def __init__(self, cfg: T5Config):
        super().__init__()
        self.norm1 = T5LayerNorm(cfg.dim, cfg.eps)
        self.attn = T5Attention(cfg.dim, cfg.num_heads)
        self.norm2 = T5LayerNorm(cfg.dim, cfg.eps)
        self.ffn = T5FeedForward(cfg.dim, cfg.ffn_dim)
        self.pos_embedding = RelativeBias(cfg.num_buckets, cfg.num_heads, cfg.max_distance)

    def forward(self, x, mask):
        bias = self.pos_embedding(x.shape[1], x.shape[1], x.device) + mask
        x = x + self.attn(self.norm1(x), bias)
        return x + self.ffn(self.norm2(x))


class T5Encoder(nn.Module):
    def __init__(self, cfg: T5Config):
        super().__init__()
        self.cfg = cfg
        self.token_embedding = nn.Embedding(cfg.vocab, cfg.dim)
        self.blocks = nn.ModuleList(T5Block(cfg) for _ in range(cfg.num_layers))
        self.norm = T5LayerNorm(cfg.dim, cfg.eps)

    @torch.no_grad()
    def forward(self, ids: torch.Tensor, lengths=None) -> torch.Tensor:
        """ids (B, L) → hidden states (B, L, dim); positions >= lengths[i] are masked keys."""
        b, n = ids.shape
        mask = torch.zeros(b, 1, 1, n, device=ids.device)
        if lengths is not None:
            keep = torch.arange(n, device=ids.device)[None] < torch.as_tensor(lengths, device=ids.device)[:, None]
            mask = mask.masked_fill(~keep[:, None, None, :], float("-inf"))
        x = self.token_embedding(ids)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)

    def encode(self, id_lists):
        """List of token id lists → list of (Li, dim) states trimmed to each prompt's length."""
        dev = self.token_embedding.weight.device
        n = max(len(i) for i in id_lists)
        ids = torch.zeros(len(id_lists), n, dtype=torch.long, device=dev)
        for j, seq in enumerate(id_lists):
            ids[j, :len(seq)] = torch.tensor(seq, dtype=torch.long)
        h = self.forward(ids, [len(s) for s in id_lists])
        return [h[j, :len(s)] for j, s in enumerate(id_lists)]
