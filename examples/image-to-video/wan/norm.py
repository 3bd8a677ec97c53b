"""RMS and layer normalisation shared by the text encoder, the diffusion transformer and CLIP."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    """RMS scaling only (no mean, no bias), statistics in fp32 whatever the input dtype.

    The result goes back to the input's dtype before the weight is applied (Wan's own norm);
    the T5 encoder casts to the weight's dtype instead (see T5LayerNorm)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _out_dtype(self, x):
        return x.dtype

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.to(self._out_dtype(x)) * self.weight


class LayerNorm(nn.LayerNorm):
    """LayerNorm with fp32 statistics, returned in the input's dtype (the authors' norm)."""

    def forward(self, x):
        return _layer_norm_fp32(self, x).to(x.dtype)


def _layer_norm_fp32(norm: nn.LayerNorm, x):
    w = norm.weight.float() if norm.weight is not None else None
    b = norm.bias.float() if norm.bias is not None else None
    return F.layer_norm(x.float(), norm.normalized_shape, w, b, norm.eps)


class FloatLayerNorm(nn.LayerNorm):
    """nn.LayerNorm as CUDA autocast runs it: fp32 math and an fp32 result whatever the input's or
    the weights' dtype (CPU autocast in torch 1.13 does not cover layer_norm, so it is explicit)."""

    def forward(self, x):
        return _layer_norm_fp32(self, x)
