"""CLIP ViT-H/14 vision tower (2.1 I2V image branch): 257 tokens from the first 31 blocks.
Names follow the `visual.*` part of the published open-clip checkpoint."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import attention
from .config import ClipVisionConfig
from .norm import LayerNorm
from .precision import autocast_to

MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)


class ClipAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.to_qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).unflatten(-1, (3, self.num_heads, -1)).unbind(2)
        return self.proj(attention(q, k, v).flatten(2))


class ClipBlock(nn.Module):
    def __init__(self, cfg: ClipVisionConfig):
        super().__init__()
        d = cfg.dim
        self.norm1 = LayerNorm(d, eps=1e-5)
        self.attn = ClipAttention(d, cfg.num_heads)
        self.norm2 = LayerNorm(d, eps=1e-5)
        self.mlp = nn.Sequential(nn.Linear(d, d * cfg.mlp_ratio), nn.GELU(),
                                 nn.Linear(d * cfg.mlp_ratio, d))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ClipVision(nn.Module):
    def __init__(self, cfg: ClipVisionConfig):
        super().__init__()
        self.cfg = cfg
        d, n = cfg.dim, (cfg.image_size // cfg.patch_size) ** 2
        self.patch_embedding = nn.Conv2d(3, d, cfg.patch_size, stride=cfg.patch_size, bias=False)
        self.cls_embedding = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embedding = nn.Parameter(torch.zeros(1, n + 1, d))
        self.pre_norm = LayerNorm(d, eps=1e-5)
        self.transformer = nn.Sequential(*(ClipBlock(cfg) for _ in range(cfg.num_layers)))
        self.post_norm = LayerNorm(d, eps=1e-5)
        self.head = nn.Parameter(torch.zeros(d, 1024 if d == 1280 else d))

    @torch.no_grad()
    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """image (B, 3, H, W) in [-1, 1], any size → tokens (B, 1 + patches, dim). With half weights
        it runs under autocast to their dtype (fp16 on CUDA, as the authors run it)."""
        s = self.cfg.image_size
        x = F.interpolate(image.float(), size=(s, s), mode="bicubic", align_corners=False)
        mean = torch.tensor(MEAN, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(STD, device=x.device).view(1, 3, 1, 1)
        x = ((x * 0.5 + 0.5) - mean) / std
        with autocast_to(self.patch_embedding.weight.dtype, x.device):
            x = self.patch_embedding(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls_embedding.expand(x.shape[0], -1, -1).to(x.dtype), x], dim=1)
            x = self.pre_norm(x + self.pos_embedding)
            # The model uses the penultimate block's output (no post_norm / head).
            for block in list(self.transformer)[: self.cfg.use_layers]:
                x = block(x)
        return x
