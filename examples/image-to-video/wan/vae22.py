"""The Wan 2.2 VAE (TI2V-5B): 48 latent channels, 16x spatial and 4x temporal compression.

Same causal, chunked scheme as the 2.1 VAE (vae.py) with three differences, all visible in the
published key layout: 2x2 pixels are folded into 12 input channels before the encoder (and
unfolded after the decoder); every resolution stage is one block (`downsamples.i.downsamples.j`,
`upsamples.i.upsamples.j`) whose output adds a parameter-free shortcut that averages (encoder) or
duplicates (decoder) values across the resampling; upsampling keeps the channel count.
"""
import torch
import torch.nn as nn

from .config import VAEConfig
from .vae import AttentionBlock, CausalConv3d, Resample, ResidualBlock, RMSNorm, WanVAE, _run

# Published per-channel latent statistics of the 2.2 VAE.
LATENT_MEAN_22 = [
    -0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174, 0.1838, 0.1557, -0.1382, 0.0542, 0.2813, 0.0891,
    0.1570, -0.0098, 0.0375, -0.1825, -0.2246, -0.1207, -0.0698, 0.5109, 0.2665, -0.2108, -0.2158, 0.2502,
    -0.2055, -0.0322, 0.1109, 0.1567, -0.0729, 0.0899, -0.2799, -0.1230, -0.0313, -0.1649, 0.0117, 0.0723,
    -0.2839, -0.2083, -0.0520, 0.3748, 0.0152, 0.1957, 0.1433, -0.2944, 0.3573, -0.0548, -0.1681, -0.0667]
LATENT_STD_22 = [
    0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.4990, 0.4818, 0.5013, 0.8158, 1.0344, 0.5894, 1.0901,
    0.6885, 0.6165, 0.8454, 0.4978, 0.5759, 0.3523, 0.7135, 0.6804, 0.5833, 1.4146, 0.8986, 0.5659,
    0.7069, 0.5338, 0.4889, 0.4917, 0.4069, 0.4999, 0.6866, 0.4093, 0.5709, 0.6065, 0.6415, 0.4944,
    0.5726, 1.2042, 0.5458, 1.6887, 0.3971, 1.0600, 0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744]


def fold_pixels(x: torch.Tensor) -> torch.Tensor:
    """(B, C, T, 2H, 2W) → (B, 4C, T, H, W); channel c·4 + 2·(w offset) + (h offset)."""
    b, c, t, h2, w2 = x.shape
    x = x.view(b, c, t, h2 // 2, 2, w2 // 2, 2)
    return x.permute(0, 1, 6, 4, 2, 3, 5).reshape(b, c * 4, t, h2 // 2, w2 // 2)


def unfold_pixels(x: torch.Tensor) -> torch.Tensor:
    """Inverse of fold_pixels."""
    b, c4, t, h, w = x.shape
    x = x.view(b, c4 // 4, 2, 2, t, h, w)
    return x.permute(0, 1, 4, 5, 3, 6, 2).reshape(b, c4 // 4, t, h * 2, w * 2)


class AverageDown(nn.Module):
    """Shortcut of a downsampling stage: mean over groups of (time, 2x2 space) neighbours and
    channels, so (C, T, H, W) → (C_out, T/ft, H/fs, W/fs). A chunk with an odd frame count is
    padded with a zero frame in front (the first, single-frame chunk)."""

    def __init__(self, in_dim, out_dim, ft, fs):
        super().__init__()
        self.out_dim, self.ft, self.fs = out_dim, ft, fs
        self.group = in_dim * ft * fs * fs // out_dim

    def forward(self, x):
        ft, fs = self.ft, self.fs
        pad = (ft - x.shape[2] % ft) % ft
        x = nn.functional.pad(x, (0, 0, 0, 0, pad, 0))
        b, c, t, h, w = x.shape
        x = x.view(b, c, t // ft, ft, h // fs, fs, w // fs, fs).permute(0, 1, 3, 5, 7, 2, 4, 6)
        x = x.reshape(b, self.out_dim, self.group, t // ft, h // fs, w // fs)
        return x.mean(dim=2)


class DuplicateUp(nn.Module):
    """Shortcut of an upsampling stage: each channel repeated into its (time, 2x2 space) block.
    On the first latent frame the duplicated leading frames are dropped (causal: 1 frame → 1)."""

    def __init__(self, in_dim, out_dim, ft, fs):
        super().__init__()
        self.out_dim, self.ft, self.fs = out_dim, ft, fs
        self.repeats = out_dim * ft * fs * fs // in_dim

    def forward(self, x, first: bool):
        ft, fs = self.ft, self.fs
        b, _, t, h, w = x.shape
        x = x.repeat_interleave(self.repeats, dim=1).view(b, self.out_dim, ft, fs, fs, t, h, w)
        x = x.permute(0, 1, 5, 2, 6, 3, 7, 4).reshape(b, self.out_dim, t * ft, h * fs, w * fs)
        return x[:, :, ft - 1:] if first else x


class DownStage(nn.Module):
    def __init__(self, in_dim, out_dim, blocks, temporal, spatial):
        super().__init__()
        self.avg_shortcut = AverageDown(in_dim, out_dim, 2 if temporal else 1, 2 if spatial else 1)
        layers = []
        for _ in range(blocks):
            layers.append(ResidualBlock(in_dim, out_dim))
            in_dim = out_dim
        if spatial:
            layers.append(Resample(out_dim, "downsample3d" if temporal else "downsample2d"))
        self.downsamples = nn.Sequential(*layers)

    def forward(self, x, cache):
        return _run(self.downsamples, x, cache) + self.avg_shortcut(x)


class UpStage(nn.Module):
    def __init__(self, in_dim, out_dim, blocks, temporal, spatial):
        super().__init__()
        self.avg_shortcut = DuplicateUp(in_dim, out_dim, 2 if temporal else 1, 2) if spatial else None
        layers = []
        for _ in range(blocks):
            layers.append(ResidualBlock(in_dim, out_dim))
            in_dim = out_dim
        if spatial:
            layers.append(Resample(out_dim, "upsample3d" if temporal else "upsample2d", up_dim=out_dim))
        self.upsamples = nn.Sequential(*layers)

    def forward(self, x, cache, first):
        out = _run(self.upsamples, x, cache)
        return out if self.avg_shortcut is None else out + self.avg_shortcut(x, first)


class Encoder22(nn.Module):
    def __init__(self, cfg: VAEConfig):
        super().__init__()
        dims = [cfg.base_dim * u for u in (1,) + tuple(cfg.dim_mult)]
        last = len(cfg.dim_mult) - 1
        self.conv1 = CausalConv3d(12, dims[0], 3, padding=1)
        self.downsamples = nn.Sequential(*(
            DownStage(a, b, cfg.num_res_blocks, i < last and cfg.temporal_downsample[i], i != last)
            for i, (a, b) in enumerate(zip(dims[:-1], dims[1:]))))
        d = dims[-1]
        self.middle = nn.Sequential(ResidualBlock(d, d), AttentionBlock(d), ResidualBlock(d, d))
        self.head = nn.Sequential(RMSNorm(d), nn.SiLU(), CausalConv3d(d, cfg.z_dim * 2, 3, padding=1))

    def forward(self, x, cache=None):
        x = self.conv1(x, cache)
        for stage in self.downsamples:
            x = stage(x, cache)
        x = _run(self.middle, x, cache)
        return _run(self.head, x, cache)


class Decoder22(nn.Module):
    def __init__(self, cfg: VAEConfig):
        super().__init__()
        mult = tuple(cfg.dim_mult)
        dims = [cfg.dec_dim * u for u in (mult[-1],) + mult[::-1]]
        up_t = tuple(cfg.temporal_downsample)[::-1]
        last = len(mult) - 1
        self.conv1 = CausalConv3d(cfg.z_dim, dims[0], 3, padding=1)
        d = dims[0]
        self.middle = nn.Sequential(ResidualBlock(d, d), AttentionBlock(d), ResidualBlock(d, d))
        self.upsamples = nn.Sequential(*(
            UpStage(a, b, cfg.num_res_blocks + 1, i < last and up_t[i], i != last)
            for i, (a, b) in enumerate(zip(dims[:-1], dims[1:]))))
        self.head = nn.Sequential(RMSNorm(dims[-1]), nn.SiLU(), CausalConv3d(dims[-1], 12, 3, padding=1))

    def forward(self, x, cache=None, first=False):
        x = self.conv1(x, cache)
        x = _run(self.middle, x, cache)
        for stage in self.upsamples:
            x = stage(x, cache, first)
        return _run(self.head, x, cache)


class WanVAE22(WanVAE):
    LATENT_MEAN, LATENT_STD = LATENT_MEAN_22, LATENT_STD_22

    def __init__(self, cfg: VAEConfig):
        nn.Module.__init__(self)
        self.cfg = cfg
        self.encoder = Encoder22(cfg)
        self.conv1 = CausalConv3d(cfg.z_dim * 2, cfg.z_dim * 2, 1)
        self.conv2 = CausalConv3d(cfg.z_dim, cfg.z_dim, 1)
        self.decoder = Decoder22(cfg)

    def _pack(self, video):
        return fold_pixels(video)

    def _unpack(self, video):
        return unfold_pixels(video)

    def _decode_frame(self, x, cache, first: bool):
        return self.decoder(x, cache, first)
