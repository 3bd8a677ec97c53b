"""RMS normalisation shared by the text encoder and the diffusion transformer."""
import torch
import torch.nn as nn


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
