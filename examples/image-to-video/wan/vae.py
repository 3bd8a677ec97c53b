"""Causal 3D convolutional VAE (Wan 2.1 VAE, also used by 2.2 A14B).

Time is causal: convolutions pad only the past. Video is processed in chunks (encode: frame 0,
then 4 frames at a time; decode: one latent frame at a time) and every causal layer keeps the
last frames of its input in `cache`, so chunked results equal whole-clip results while memory
stays bounded by one chunk.
"""
from typing import Dict, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import VAEConfig

CACHE_T = 2  # frames of history a kernel-3 causal conv needs

# Published per-channel latent statistics of the 2.1 VAE (z = (mu - mean) / std).
LATENT_MEAN = [-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
               0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921]
LATENT_STD = [2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
              3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160]

Cache = Optional[Dict[int, torch.Tensor]]


class CausalConv3d(nn.Conv3d):
    def __init__(self, *args, padding=0, **kwargs):
        super().__init__(*args, padding=0, **kwargs)
        p = padding if isinstance(padding, tuple) else (padding,) * 3
        # F.pad order: (w_left, w_right, h_top, h_bottom, t_front, t_back); no future frames.
        self._pad = (p[2], p[2], p[1], p[1], 2 * p[0], 0)

    def forward(self, x, cache: Cache = None):
        pad = list(self._pad)
        if cache is not None and self._pad[4] > 0:
            prev = cache.get(id(self))
            # Remember the last CACHE_T input frames for the next chunk (before prepending).
            new = x[:, :, -CACHE_T:]
            if new.shape[2] < CACHE_T and prev is not None:
                new = torch.cat([prev[:, :, -1:], new], dim=2)
            cache[id(self)] = new.detach().clone()
            if prev is not None:
                x = torch.cat([prev, x], dim=2)
                pad[4] -= prev.shape[2]
        return super().forward(F.pad(x, pad))


class RMSNorm(nn.Module):
    """Channel RMS norm: F.normalize over channels · sqrt(C) · gamma."""

    def __init__(self, dim, images=False):
        super().__init__()
        shape = (dim, 1, 1) if images else (dim, 1, 1, 1)
        self.scale = dim ** 0.5
        self.gamma = nn.Parameter(torch.ones(shape))

    def forward(self, x):
        return F.normalize(x, dim=1) * self.scale * self.gamma


def _frames(fn, x):
    """Apply a 2D module frame by frame: (B, C, T, H, W)."""
    b, c, t = x.shape[:3]
    y = fn(x.transpose(1, 2).flatten(0, 1))
    return y.unflatten(0, (b, t)).transpose(1, 2)


class ResidualBlock(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.residual = nn.Sequential(
            RMSNorm(in_dim), nn.SiLU(), CausalConv3d(in_dim, out_dim, 3, padding=1),
            RMSNorm(out_dim), nn.SiLU(), nn.Dropout(0.0), CausalConv3d(out_dim, out_dim, 3, padding=1))
        self.shortcut = CausalConv3d(in_dim, out_dim, 1) if in_dim != out_dim else nn.Identity()

    def forward(self, x, cache: Cache = None):
        h = self.shortcut(x) if isinstance(self.shortcut, nn.Identity) else self.shortcut(x, cache)
        for layer in self.residual:
            x = layer(x, cache) if isinstance(layer, CausalConv3d) else layer(x)
        return x + h


class AttentionBlock(nn.Module):
    """Single-head self-attention over the pixels of each frame."""

    def __init__(self, dim):
        super().__init__()
        self.norm = RMSNorm(dim, images=True)
        self.to_qkv = nn.Conv2d(dim, dim * 3, 1)
        self.proj = nn.Conv2d(dim, dim, 1)

    def _frame(self, x):
        n, c, h, w = x.shape
        q, k, v = self.to_qkv(self.norm(x)).flatten(2).transpose(1, 2).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(1, 2) / c ** 0.5, dim=-1) @ v
        return self.proj(a.transpose(1, 2).reshape(n, c, h, w))

    def forward(self, x, cache: Cache = None):
        return x + _frames(self._frame, x)


class Resample(nn.Module):
    """2x spatial (and with "3d", 2x temporal) down/upsampling. The 2.1 VAE halves the channels
    when upsampling (up_dim = dim // 2), the 2.2 VAE keeps them (up_dim = dim)."""

    def __init__(self, dim, mode, up_dim=None):
        super().__init__()
        self.mode = mode
        if mode.startswith("up"):
            self.resample = nn.Sequential(nn.Upsample(scale_factor=(2.0, 2.0), mode="nearest-exact"),
                                          nn.Conv2d(dim, up_dim or dim // 2, 3, padding=1))
        else:
            self.resample = nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)),
                                          nn.Conv2d(dim, dim, 3, stride=(2, 2)))
        if mode == "upsample3d":
            self.time_conv = CausalConv3d(dim, dim * 2, (3, 1, 1), padding=(1, 0, 0))
        elif mode == "downsample3d":
            self.time_conv = CausalConv3d(dim, dim, (3, 1, 1), stride=(2, 1, 1))

    def forward(self, x, cache: Cache = None):
        if self.mode == "upsample3d":
            x = self._time_up(x, cache)
        x = _frames(self.resample, x)
        if self.mode == "downsample3d":
            x = self._time_down(x, cache)
        return x

    def _time_up(self, x, cache):
        # Frame 0 passes through; every later latent frame becomes 2 frames (channels split).
        key = id(self)
        if cache is None:
            first, rest = x[:, :, :1], x[:, :, 1:]
            if rest.shape[2] == 0:
                return first
            rest = self._double(self.time_conv(rest))
            return torch.cat([first, rest], dim=2)
        if key not in cache:
            cache[key] = None  # marks "frame 0 seen"; the conv history starts after it
            return x
        sub = cache.setdefault(("up", key), {})
        return self._double(self.time_conv(x, sub))

    @staticmethod
    def _double(y):
        b, c2, t, h, w = y.shape
        y = y.view(b, 2, c2 // 2, t, h, w)
        return torch.stack([y[:, 0], y[:, 1]], dim=3).reshape(b, c2 // 2, t * 2, h, w)

    def _time_down(self, x, cache):
        # Frame 0 alone stays; later frames go through a stride-2 conv that overlaps one frame.
        key = id(self)
        if cache is None:
            first = x[:, :, :1]
            if x.shape[2] == 1:
                return first
            return torch.cat([first, self.time_conv(x)], dim=2)
        prev = cache.get(key)
        cache[key] = x[:, :, -1:].detach().clone()
        if prev is None:
            return x
        return self.time_conv(torch.cat([prev, x], dim=2))


def _run(seq, x, cache):
    for layer in seq:
        x = layer(x, cache) if isinstance(layer, (CausalConv3d, ResidualBlock, AttentionBlock,
                                                   Resample)) else layer(x)
    return x


class Encoder3d(nn.Module):
    def __init__(self, cfg: VAEConfig):
        super().__init__()
        dims = [cfg.base_dim * u for u in (1,) + tuple(cfg.dim_mult)]
        self.conv1 = CausalConv3d(3, dims[0], 3, padding=1)
        layers = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            for _ in range(cfg.num_res_blocks):
                layers.append(ResidualBlock(a, b))
                a = b
            if i != len(cfg.dim_mult) - 1:
                layers.append(Resample(b, "downsample3d" if cfg.temporal_downsample[i]
                                       else "downsample2d"))
        self.downsamples = nn.Sequential(*layers)
        d = dims[-1]
        self.middle = nn.Sequential(ResidualBlock(d, d), AttentionBlock(d), ResidualBlock(d, d))
        self.head = nn.Sequential(RMSNorm(d), nn.SiLU(), CausalConv3d(d, cfg.z_dim * 2, 3, padding=1))

    def forward(self, x, cache: Cache = None):
        x = self.conv1(x, cache)
        x = _run(self.downsamples, x, cache)
        x = _run(self.middle, x, cache)
        return _run(self.head, x, cache)


class Decoder3d(nn.Module):
    def __init__(self, cfg: VAEConfig):
        super().__init__()
        mult = tuple(cfg.dim_mult)
        dims = [cfg.base_dim * u for u in (mult[-1],) + mult[::-1]]
        up_t = tuple(cfg.temporal_downsample)[::-1]
        self.conv1 = CausalConv3d(cfg.z_dim, dims[0], 3, padding=1)
        d = dims[0]
        self.middle = nn.Sequential(ResidualBlock(d, d), AttentionBlock(d), ResidualBlock(d, d))
        layers = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            if i in (1, 2, 3):
                a = a // 2  # the previous upsample halved the channels
            for _ in range(cfg.num_res_blocks + 1):
                layers.append(ResidualBlock(a, b))
                a = b
            if i != len(mult) - 1:
                layers.append(Resample(b, "upsample3d" if up_t[i] else "upsample2d"))
        self.upsamples = nn.Sequential(*layers)
        self.head = nn.Sequential(RMSNorm(dims[-1]), nn.SiLU(),
                                  CausalConv3d(dims[-1], 3, 3, padding=1))

    def forward(self, x, cache: Cache = None):
        x = self.conv1(x, cache)
        x = _run(self.middle, x, cache)
        x = _run(self.upsamples, x, cache)
        return _run(self.head, x, cache)


class WanVAE(nn.Module):
    def __init__(self, cfg: VAEConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder3d(cfg)
        self.conv1 = CausalConv3d(cfg.z_dim * 2, cfg.z_dim * 2, 1)
        self.conv2 = CausalConv3d(cfg.z_dim, cfg.z_dim, 1)
        self.decoder = Decoder3d(cfg)

    LATENT_MEAN, LATENT_STD = LATENT_MEAN, LATENT_STD

    def _stats(self, ref):
        """(mean, 1/std) as the authors scale: z = (mu - mean) · (1/std), mu = z / (1/std) + mean."""
        n = self.cfg.z_dim
        mean = torch.tensor(self.LATENT_MEAN, dtype=torch.float32, device=ref.device)
        std = torch.tensor(self.LATENT_STD, dtype=torch.float32, device=ref.device)
        if n != len(self.LATENT_MEAN):  # only for odd test configs
            mean, std = torch.zeros(n, device=ref.device), torch.ones(n, device=ref.device)
        return mean.view(1, n, 1, 1, 1), (1.0 / std).view(1, n, 1, 1, 1)

    @torch.no_grad()
    def encode(self, video: torch.Tensor) -> torch.Tensor:
        """video (B, 3, 1+4k, H, W) in [-1, 1] → normalized latent (B, z, 1+k, H/8, W/8)."""
        dtype = self.conv1.weight.dtype
        video = self._pack(video.to(dtype))
        cache: dict = {}
        t = video.shape[2]
        chunks = [video[:, :, :1]] + [video[:, :, i:i + 4] for i in range(1, t, 4)]
        h = torch.cat([self.encoder(c, cache) for c in chunks], dim=2)
        mu = self.conv1(h)[:, :self.cfg.z_dim].float()
        mean, inv_std = self._stats(mu)
        return (mu - mean) * inv_std

    @torch.no_grad()
    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """normalized latent (B, z, T, h, w) → video (B, 3, 1+4(T-1), 8h, 8w) clamped to [-1, 1]."""
        dtype = self.conv2.weight.dtype
        mean, inv_std = self._stats(z)
        x = self.conv2((z.float() / inv_std + mean).to(dtype))
        cache: dict = {}
        out = [self._decode_frame(x[:, :, i:i + 1], cache, i == 0) for i in range(x.shape[2])]
        return self._unpack(torch.cat(out, dim=2)).float().clamp_(-1, 1)

    # The 2.2 VAE (vae22.py) folds 2x2 pixels into channels around the same chunked scheme.
    def _pack(self, video):
        return video

    def _unpack(self, video):
        return video

    def _decode_frame(self, x, cache, first: bool):
        return self.decoder(x, cache)
