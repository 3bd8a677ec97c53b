"""Scaled dot-product attention: fused kernel on torch 2.x, chunked fallback on torch 1.13."""
import math

import torch
import torch.nn.functional as F

_SDPA = getattr(F, "scaled_dot_product_attention", None)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask=None) -> torch.Tensor:
    """q (B, Lq, H, D), k/v (B, Lk, H, D) → (B, Lq, H, D). mask: bool (B, 1, 1, Lk), True = keep."""
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    if _SDPA is not None:
        out = _SDPA(q, k, v, attn_mask=mask)
    else:
        out = _chunked(q, k, v, mask)
    return out.transpose(1, 2)


def _chunked(q, k, v, mask, chunk: int = 1024):
    # Query chunks bound the (Lq, Lk) score matrix so CPU memory stays small.
    scale = 1.0 / math.sqrt(q.shape[-1])
    outs = []
    for i in range(0, q.shape[2], chunk):
        s = torch.matmul(q[:, :, i:i + chunk].float(), k.float().transpose(-1, -2)) * scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        outs.append(torch.matmul(s.softmax(-1), v.float()).to(q.dtype))
    return torch.cat(outs, dim=2)


def plain_attention(q, k, v, mask=None, scale=None):
    """Attention without the 1/sqrt(d) default (T5 uses unscaled scores). Shapes as `attention`."""
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    s = torch.matmul(q.float(), k.float().transpose(-1, -2))
    if scale is not None:
        s = s * scale
    if mask is not None:
        s = s + mask
    return torch.matmul(s.softmax(-1), v.float()).to(q.dtype).transpose(1, 2)
