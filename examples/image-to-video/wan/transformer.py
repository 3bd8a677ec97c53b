"""The Wan diffusion transformer (one expert). Module names match the published checkpoints.

Precision follows the authors' code: with half-precision weights the forward runs under autocast
(matmuls in bf16), while the time embedding, the modulation, the norms, the residual stream and
the output head stay in fp32."""
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import attention
from .config import TransformerConfig
from .norm import FloatLayerNorm, LayerNorm as TypedLayerNorm, RMSNorm
from .precision import autocast_to
from .rope import apply_rope, rope_tables


class LayerNorm(TypedLayerNorm):
    """The transformer's norms: eps 1e-6, no affine parameters unless asked."""

    def __init__(self, dim, eps=1e-6, elementwise_affine=False):
        super().__init__(dim, eps=eps, elementwise_affine=elementwise_affine)


class SelfAttention(nn.Module):
    def __init__(self, dim, num_heads, eps):
        super().__init__()
        self.num_heads = num_heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        # RMSNorm over the whole dim (before the head split), as published.
        self.norm_q = RMSNorm(dim, eps)
        self.norm_k = RMSNorm(dim, eps)

    def forward(self, x, cos, sin):
        b, n = x.shape[0], self.num_heads
        q = self.norm_q(self.q(x)).unflatten(-1, (n, -1))
        k = self.norm_k(self.k(x)).unflatten(-1, (n, -1))
        v = self.v(x).unflatten(-1, (n, -1))
        # RoPE runs in fp32; the attention kernel gets q and k in v's (autocast) dtype.
        q, k = apply_rope(q, cos, sin).to(v.dtype), apply_rope(k, cos, sin).to(v.dtype)
        return self.o(attention(q, k, v).flatten(2))


class CrossAttention(nn.Module):
    def __init__(self, dim, num_heads, eps, image_branch=False, image_tokens=257):
        super().__init__()
        self.num_heads = num_heads
        self.image_tokens = image_tokens if image_branch else 0
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.norm_q = RMSNorm(dim, eps)
        self.norm_k = RMSNorm(dim, eps)
        if image_branch:
            self.k_img = nn.Linear(dim, dim)
            self.v_img = nn.Linear(dim, dim)
            self.norm_k_img = RMSNorm(dim, eps)

    def forward(self, x, context):
        n = self.num_heads
        q = self.norm_q(self.q(x)).unflatten(-1, (n, -1))
        txt = context[:, self.image_tokens:]
        k = self.norm_k(self.k(txt)).unflatten(-1, (n, -1))
        v = self.v(txt).unflatten(-1, (n, -1))
        out = attention(q, k, v)
        if self.image_tokens:
            img = context[:, :self.image_tokens]
            ki = self.norm_k_img(self.k_img(img)).unflatten(-1, (n, -1))
            vi = self.v_img(img).unflatten(-1, (n, -1))
            out = out + attention(q, ki, vi)
        return self.o(out.flatten(2))


class Block(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        d = cfg.dim
        self.norm1 = LayerNorm(d, cfg.eps)
        self.self_attn = SelfAttention(d, cfg.num_heads, cfg.eps)
        self.norm3 = LayerNorm(d, cfg.eps, elementwise_affine=True)
        self.cross_attn = CrossAttention(d, cfg.num_heads, cfg.eps, cfg.image_dim is not None,
                                         cfg.image_tokens)
        self.norm2 = LayerNorm(d, cfg.eps)
        self.ffn = nn.Sequential(nn.Linear(d, cfg.ffn_dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(cfg.ffn_dim, d))
        self.modulation = nn.Parameter(torch.randn(1, 6, d) / d ** 0.5)

    def forward(self, x, e0, context, cos, sin):
        """e0 (B, L or 1, 6, dim) fp32: shift/scale/gate vectors m0..m5, per token or per sample.
        The gated sums promote the residual stream x to fp32, as in the authors' code."""
        m = (self.modulation.float() + e0).unbind(2)
        h = self.norm1(x).float() * (1 + m[1]) + m[0]
        x = x + self.self_attn(h, cos, sin) * m[2]
        x = x + self.cross_attn(self.norm3(x), context)
        x = x + self.ffn(self.norm2(x).float() * (1 + m[4]) + m[3]) * m[5]
        return x


class Head(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        d = cfg.dim
        self.norm = LayerNorm(d, cfg.eps)
        self.head = nn.Linear(d, math.prod(cfg.patch_size) * cfg.out_dim)
        self.modulation = nn.Parameter(torch.randn(1, 2, d) / d ** 0.5)

    def forward(self, x, e):
        """e (B, L or 1, dim) fp32. The head runs in fp32 whatever the weights' dtype."""
        shift, scale = (self.modulation.float() + e.unsqueeze(2)).unbind(2)
        h = self.norm(x).float() * (1 + scale) + shift
        return F.linear(h, self.head.weight.float(), self.head.bias.float())


class ImageProjection(nn.Module):
    """CLIP tokens → model dim (2.1 I2V): LN → Linear → GELU → Linear → LN."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.proj = nn.Sequential(FloatLayerNorm(in_dim), nn.Linear(in_dim, in_dim), nn.GELU(),
                                  nn.Linear(in_dim, out_dim), FloatLayerNorm(out_dim))

    def forward(self, x):
        return self.proj(x)


def sinusoidal_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """cat[cos, sin] of t · 10000^(-i/(dim/2)), computed in fp64 (t goes up to 1000)."""
    half = dim // 2
    freqs = torch.pow(10000.0, -torch.arange(half, dtype=torch.float64, device=t.device) / half)
    a = torch.outer(t.double(), freqs)
    return torch.cat([a.cos(), a.sin()], dim=1).float()


def _fp32(seq: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    for m in seq:
        x = F.linear(x, m.weight.float(), m.bias.float()) if isinstance(m, nn.Linear) else m(x)
    return x


class WanTransformer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.dim
        self.patch_embedding = nn.Conv3d(cfg.in_dim, d, kernel_size=cfg.patch_size,
                                         stride=cfg.patch_size)
        self.text_embedding = nn.Sequential(nn.Linear(cfg.text_dim, d),
                                            nn.GELU(approximate="tanh"), nn.Linear(d, d))
        self.time_embedding = nn.Sequential(nn.Linear(cfg.freq_dim, d), nn.SiLU(),
                                            nn.Linear(d, d))
        self.time_projection = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.num_layers))
        self.head = Head(cfg)
        if cfg.image_dim is not None:
            self.img_emb = ImageProjection(cfg.image_dim, d)
        self._rope_cache = {}

    def _rope(self, f, h, w, device):
        key = (f, h, w, str(device))
        if key not in self._rope_cache:
            self._rope_cache = {key: rope_tables(f, h, w, self.cfg.head_dim, device)}
        return self._rope_cache[key]

    def pad_text(self, embeds):
        """List of (Li, text_dim) T5 outputs → (B, text_len, text_dim), zero padded."""
        out = embeds[0].new_zeros(len(embeds), self.cfg.text_len, self.cfg.text_dim)
        for i, e in enumerate(embeds):
            n = min(e.shape[0], self.cfg.text_len)
            out[i, :n] = e[:n]
        return out

    def forward(self, x: torch.Tensor, t: torch.Tensor, context: torch.Tensor,
                clip_tokens: Optional[torch.Tensor] = None, step_cache=None) -> torch.Tensor:
        """x (B, in_dim, F, H, W) latent (+ condition), t (B,) timesteps in [0, 1000] or
        (B, tokens) per-token timesteps (TI2V-5B), context (B, text_len, text_dim) zero padded T5
        states, clip_tokens (B, 257, 1280) for 2.1; step_cache (wan/stepcache.py) may replace the
        blocks of some rows by a cached residual. Returns velocity (B, out_dim, F, H, W) fp32."""
        with autocast_to(self.patch_embedding.weight.dtype, x.device):
            return self._forward(x, t, context, clip_tokens, step_cache)

    def _forward(self, x, t, context, clip_tokens, step_cache):
        cfg = self.cfg
        pt, ph, pw = cfg.patch_size
        b, _, fr, hh, ww = x.shape
        f, h, w = fr // pt, hh // ph, ww // pw
        tokens = self.patch_embedding(x).flatten(2).transpose(1, 2)

        # Time embedding in fp32 (autocast off): e for the head, e0 for the blocks.
        t = t[:, None] if t.dim() == 1 else t
        with autocast_to(torch.float32, x.device):
            e = _fp32(self.time_embedding, sinusoidal_embedding(t.flatten(), cfg.freq_dim))
            e = e.unflatten(0, t.shape)
            e0 = _fp32(self.time_projection, e).unflatten(2, (6, cfg.dim))

        ctx = self.text_embedding(context)
        if cfg.image_dim is not None:
            if clip_tokens is None:
                raise ValueError("this config has a CLIP image branch: clip_tokens is required")
            ctx = torch.cat([self.img_emb(clip_tokens).float(), ctx.float()], dim=1)

        cos, sin = self._rope(f, h, w, x.device)

        def blocks(rows=None):
            out, e_rows, c_rows = tokens, e0, ctx
            if rows is not None and len(rows) != tokens.shape[0]:
                out, e_rows, c_rows = tokens[rows], e0[rows], ctx[rows]
            for block in self.blocks:
                out = block(out, e_rows, c_rows, cos, sin)
            return out

        tokens = blocks() if step_cache is None else step_cache.run_blocks(tokens, blocks)
        with autocast_to(torch.float32, x.device):
            out = self.head(tokens.float(), e)
        # Unpatchify: (B, f*h*w, pt*ph*pw*C) → (B, C, f*pt, h*ph, w*pw).
        out = out.float().view(b, f, h, w, pt, ph, pw, cfg.out_dim)
        out = out.permute(0, 7, 1, 4, 2, 5, 3, 6)
        return out.reshape(b, cfg.out_dim, f * pt, h * ph, w * pw)
