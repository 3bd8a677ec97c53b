"""Wan 2.2 TI2V-5B in tiny form: size rule, first-frame preparation, the 2.2 VAE's chunked
scheme, per-token timesteps and the frame kept fixed while denoising."""
import numpy as np
import pytest
import torch

from wan.config import TINY_5B, get_config
from wan.image import cover_and_crop, resize_lanczos
from wan.inputs import cover_size
from wan.loader import load_components
from wan.pipeline import generate
from wan.vae22 import WanVAE22, fold_pixels, unfold_pixels
from wan.weights import random_init


def test_selectable_by_configuration():
    cfg = get_config("5b")
    assert cfg.name == "wan2.2-ti2v-5b" and cfg.fps == 24 and cfg.vae.stride == (4, 16, 16)
    assert cfg.vae.z_dim == 48 and cfg.transformer.in_dim == cfg.transformer.out_dim == 48
    assert cfg.first_frame_latent and not cfg.two_experts and cfg.clip is None
    assert cfg.vae_file == "Wan2.2_VAE.pth"


def test_size_rule_gives_the_authors_720p():
    # the authors' rule keeps the closer aspect: a 16:9 image gets 1248x704, not 1280x704
    assert cover_size(1280 * 704, 704, 1280) == (704, 1280)
    assert cover_size(1280 * 704, 1280, 704) == (1280, 704)
    assert cover_size(1280 * 704, 720, 1280) == (704, 1248)
    assert cover_size(1280 * 704, 1280, 720) == (1248, 704)
    assert cover_size(1280 * 704, 1000, 1000) == (928, 960)
    h, w = cover_size(1280 * 704, 3000, 4000)
    assert h % 32 == 0 and w % 32 == 0 and h * w <= 1280 * 704


def test_lanczos_is_pillows():
    Image = pytest.importorskip("PIL.Image")   # Pillow is the reference, not a worker dependency
    g = np.random.default_rng(0)
    for (H, W, h, w) in [(180, 320, 72, 128), (60, 100, 130, 211), (33, 47, 33, 20)]:
        a = g.integers(0, 256, (H, W, 3), dtype=np.uint8)
        want = np.array(Image.fromarray(a).resize((w, h), Image.LANCZOS))
        assert np.array_equal(resize_lanczos(a, w, h), want)


def test_cover_and_crop_keeps_the_centre():
    a = np.zeros((90, 200, 3), np.uint8)
    a[:, 95:105] = 255                 # a bright bar in the middle
    out = cover_and_crop(a, 64, 64)
    assert out.shape == (64, 64, 3)
    assert out[:, 30:34].mean() > 200 and out[:, :20].max() == 0


def test_pixel_folding_round_trips():
    x = torch.arange(2 * 3 * 1 * 4 * 6, dtype=torch.float32).view(2, 3, 1, 4, 6)
    f = fold_pixels(x)
    assert f.shape == (2, 12, 1, 2, 3)
    assert f[0, 0, 0, 0, 0] == x[0, 0, 0, 0, 0] and f[0, 1, 0, 0, 0] == x[0, 0, 0, 1, 0]
    assert f[0, 2, 0, 0, 0] == x[0, 0, 0, 0, 1]
    assert torch.equal(unfold_pixels(f), x)


def test_wan22_vae_shapes_and_causality():
    vae = random_init(WanVAE22(TINY_5B.vae), 5).eval()
    g = torch.Generator().manual_seed(1)
    v = torch.rand(1, 3, 9, 32, 64, generator=g) * 2 - 1
    z = vae.encode(v)
    assert z.shape == (1, 48, 3, 2, 4)
    v2 = v.clone()
    v2[:, :, 5:] = 0
    z2 = vae.encode(v2)
    assert torch.equal(z[:, :, :2], z2[:, :, :2]) and not torch.equal(z[:, :, 2], z2[:, :, 2])
    out = vae.decode(z)
    assert out.shape == (1, 3, 9, 32, 64) and out.min() >= -1 and out.max() <= 1
    assert torch.equal(vae.decode(z[:, :, :1])[:, :, :1], out[:, :, :1])   # first frame alone


def test_per_token_timesteps_and_fixed_first_frame(monkeypatch):
    c = load_components("tiny-5b")
    seen, decoded = [], []
    orig = c.experts[0].forward
    monkeypatch.setattr(c.experts[0], "forward", lambda x, t, *a: seen.append((x, t)) or orig(x, t, *a))
    orig_decode = c.vae.decode
    monkeypatch.setattr(c.vae, "decode", lambda z: decoded.append(z) or orig_decode(z))
    rgb = np.random.default_rng(2).integers(0, 256, (90, 160, 3), dtype=np.uint8)
    res = generate(c, rgb, "p", "", 9, 3, 5.0, 5.0, seed=4, area=128 * 64)
    assert res.frames.shape == (9, 64, 128, 3)
    per_frame = 2 * 4                       # latent 4x8 → 2x4 tokens per latent frame
    from wan.scheduler import Schedule
    assert len(seen) == 3
    for (x, t), step in zip(seen, Schedule(3, 5.0).timesteps):
        assert x.shape == (2, 48, 3, 4, 8) and t.shape == (2, 3 * per_frame)
        assert torch.all(t[:, :per_frame] == 0) and torch.all(t[:, per_frame:] == step)
    # latent frame 0 is the image's encoding throughout
    first = seen[0][0][0, :, 0]
    assert all(torch.equal(x[0, :, 0], first) for x, _ in seen)
    assert torch.equal(decoded[0][0, :, 0], first)
