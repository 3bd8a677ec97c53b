"""Full-size configs built on the meta device: names, shapes and parameter counts must match
the published checkpoints' layout (expected counts derived here from the config arithmetic)."""
import math

import pytest
import torch

from wan.clip import ClipVision
from wan.config import WAN21_I2V_14B, WAN22_I2V_A14B, WAN22_TI2V_5B
from wan.t5 import T5Encoder
from wan.transformer import WanTransformer
from wan.vae import WanVAE
from wan.vae22 import WanVAE22
from wan.weights import empty_init


def assert_shapes(params, expected):
    for name, shape in expected.items():
        assert params.get(name) == shape, (name, params.get(name))


def lin(i, o, bias=True):
    return i * o + (o if bias else 0)


def expected_transformer(c):
    d, f, p = c.dim, c.ffn_dim, math.prod(c.patch_size)
    attn = 4 * lin(d, d) + 2 * d                             # q k v o + norm_q norm_k
    cross = attn + ((2 * lin(d, d) + d) if c.image_dim else 0)  # k_img v_img norm_k_img
    block = attn + cross + 2 * d + lin(d, f) + lin(f, d) + 6 * d  # norm3, ffn, modulation
    embed = (c.in_dim * d * p + d) + lin(c.text_dim, d) + lin(d, d) + lin(c.freq_dim, d) \
        + lin(d, d) + lin(d, 6 * d)
    head = lin(d, p * c.out_dim) + 2 * d
    img = (2 * c.image_dim + lin(c.image_dim, c.image_dim) + lin(c.image_dim, d) + 2 * d) \
        if c.image_dim else 0
    return c.num_layers * block + embed + head + img


def expected_names(c):
    names = {"patch_embedding.weight", "patch_embedding.bias", "head.head.weight", "head.head.bias",
             "head.modulation"}
    for m in ("text_embedding.0", "text_embedding.2", "time_embedding.0", "time_embedding.2",
              "time_projection.1"):
        names |= {m + ".weight", m + ".bias"}
    for i in range(c.num_layers):
        b = f"blocks.{i}."
        for a in ("self_attn", "cross_attn"):
            for l in "qkvo":
                names |= {f"{b}{a}.{l}.weight", f"{b}{a}.{l}.bias"}
            names |= {f"{b}{a}.norm_q.weight", f"{b}{a}.norm_k.weight"}
        if c.image_dim:
            names |= {f"{b}cross_attn.{l}.{s}" for l in ("k_img", "v_img") for s in ("weight", "bias")}
            names.add(f"{b}cross_attn.norm_k_img.weight")
        names |= {f"{b}norm3.weight", f"{b}norm3.bias", f"{b}modulation"}
        names |= {f"{b}ffn.{j}.{s}" for j in (0, 2) for s in ("weight", "bias")}
    if c.image_dim:
        names |= {f"img_emb.proj.{j}.{s}" for j in (0, 1, 3, 4) for s in ("weight", "bias")}
    return names


def meta(cls, cfg):
    with empty_init("meta"):
        return cls(cfg)


@pytest.mark.parametrize("cfg", [WAN22_I2V_A14B, WAN21_I2V_14B], ids=lambda c: c.name)
def test_transformer_layout(cfg):
    m = meta(WanTransformer, cfg.transformer)
    params = dict(m.named_parameters())
    assert all(p.device.type == "meta" for p in params.values())
    assert set(params) == expected_names(cfg.transformer)
    n = sum(p.numel() for p in params.values())
    assert n == expected_transformer(cfg.transformer)
    # 2.2 expert: 14.29B. 2.1 "14B": 16.39B, the CLIP branch's k_img/v_img adding 2.1B.
    lo, hi = (14.0e9, 14.5e9) if cfg.transformer.image_dim is None else (16.2e9, 16.6e9)
    assert lo < n < hi, n
    shapes = {
        "patch_embedding.weight": (5120, 36, 1, 2, 2),
        "text_embedding.0.weight": (5120, 4096),
        "time_embedding.0.weight": (5120, 256),
        "time_projection.1.weight": (30720, 5120),
        "blocks.0.self_attn.norm_q.weight": (5120,),
        "blocks.39.ffn.0.weight": (13824, 5120),
        "blocks.39.ffn.2.weight": (5120, 13824),
        "blocks.0.modulation": (1, 6, 5120),
        "head.head.weight": (64, 5120),
        "head.modulation": (1, 2, 5120),
    }
    if cfg.transformer.image_dim:
        shapes.update({"img_emb.proj.0.weight": (1280,), "img_emb.proj.1.weight": (1280, 1280),
                       "img_emb.proj.3.weight": (5120, 1280), "img_emb.proj.4.weight": (5120,),
                       "blocks.7.cross_attn.k_img.weight": (5120, 5120)})
    for k, s in shapes.items():
        assert tuple(params[k].shape) == s, k
    assert cfg.transformer.head_dim == 128


def test_counts_differ_only_by_image_branch():
    a, b = WAN22_I2V_A14B.transformer, WAN21_I2V_14B.transformer
    d = 5120
    branch = 40 * (2 * (d * d + d) + d) + (2 * 1280 + 1280 * 1280 + 1280 + 1280 * d + d + 2 * d)
    assert expected_transformer(b) - expected_transformer(a) == branch


def test_t5_layout():
    c = WAN22_I2V_A14B.t5
    m = meta(T5Encoder, c)
    params = dict(m.named_parameters())
    per_layer = 2 * c.dim + 4 * c.dim * c.dim + 3 * c.dim * c.ffn_dim + c.num_buckets * c.num_heads
    assert sum(p.numel() for p in params.values()) == c.vocab * c.dim + c.num_layers * per_layer + c.dim
    for k, s in {"token_embedding.weight": (256384, 4096), "blocks.0.attn.q.weight": (4096, 4096),
                 "blocks.23.ffn.gate.0.weight": (10240, 4096), "blocks.23.ffn.fc1.weight": (10240, 4096),
                 "blocks.23.ffn.fc2.weight": (4096, 10240), "blocks.5.pos_embedding.embedding.weight": (32, 64),
                 "blocks.0.norm1.weight": (4096,), "norm.weight": (4096,)}.items():
        assert tuple(params[k].shape) == s, k


def test_vae_layout():
    m = meta(WanVAE, WAN22_I2V_A14B.vae)
    params = {k: tuple(v.shape) for k, v in m.named_parameters()}
    expected = {
        "encoder.conv1.weight": (96, 3, 3, 3, 3),
        "encoder.downsamples.0.residual.0.gamma": (96, 1, 1, 1),
        "encoder.downsamples.2.resample.1.weight": (96, 96, 3, 3),
        "encoder.downsamples.3.shortcut.weight": (192, 96, 1, 1, 1),
        "encoder.downsamples.5.time_conv.weight": (192, 192, 3, 1, 1),
        "encoder.middle.1.norm.gamma": (384, 1, 1),
        "encoder.middle.1.to_qkv.weight": (1152, 384, 1, 1),
        "encoder.head.2.weight": (32, 384, 3, 3, 3),
        "conv1.weight": (32, 32, 1, 1, 1),
        "conv2.weight": (16, 16, 1, 1, 1),
        "decoder.conv1.weight": (384, 16, 3, 3, 3),
        "decoder.upsamples.3.time_conv.weight": (768, 384, 3, 1, 1),
        "decoder.upsamples.3.resample.1.weight": (192, 384, 3, 3),
        "decoder.upsamples.4.residual.2.weight": (384, 192, 3, 3, 3),
        "decoder.upsamples.11.resample.1.weight": (96, 192, 3, 3),
        "decoder.head.2.weight": (3, 96, 3, 3, 3),
    }
    assert_shapes(params, expected)
    assert "decoder.upsamples.11.time_conv.weight" not in params   # last upsample is 2D only
    n = sum(math.prod(s) for s in params.values())
    assert 120e6 < n < 135e6, n


def test_clip_layout():
    m = meta(ClipVision, WAN21_I2V_14B.clip)
    params = {k: tuple(v.shape) for k, v in m.named_parameters()}
    assert params["pos_embedding"] == (1, 257, 1280)
    assert params["patch_embedding.weight"] == (1280, 3, 14, 14)
    assert params["transformer.31.mlp.0.weight"] == (5120, 1280)
    assert params["transformer.0.attn.to_qkv.weight"] == (3840, 1280)


def test_ti2v_5b_transformer_matches_the_published_checkpoint():
    c = WAN22_TI2V_5B.transformer
    m = meta(WanTransformer, c)
    params = dict(m.named_parameters())
    assert set(params) == expected_names(c)
    # published TI2V-5B checkpoint: 825 tensors, 4,999,787,712 parameters
    assert len(params) == 825
    assert sum(p.numel() for p in params.values()) == 4_999_787_712 == expected_transformer(c)
    for k, s in {"patch_embedding.weight": (3072, 48, 1, 2, 2), "text_embedding.0.weight": (3072, 4096),
                 "time_projection.1.weight": (18432, 3072), "blocks.29.ffn.0.weight": (14336, 3072),
                 "blocks.29.self_attn.norm_q.weight": (3072,), "blocks.0.modulation": (1, 6, 3072),
                 "head.head.weight": (192, 3072), "head.modulation": (1, 2, 3072)}.items():
        assert tuple(params[k].shape) == s, k
    assert c.head_dim == 128 and not any("img" in k for k in params)


def test_wan22_vae_layout():
    m = meta(WanVAE22, WAN22_TI2V_5B.vae)
    params = {k: tuple(v.shape) for k, v in m.named_parameters()}
    # counted from the authors' Wan 2.2 VAE module (z_dim 48, dim 160, decoder dim 256)
    assert len(params) == 196 and sum(math.prod(s) for s in params.values()) == 704_688_668
    expected = {
        "encoder.conv1.weight": (160, 12, 3, 3, 3),
        "encoder.downsamples.0.downsamples.2.resample.1.weight": (160, 160, 3, 3),
        "encoder.downsamples.1.downsamples.0.shortcut.weight": (320, 160, 1, 1, 1),
        "encoder.downsamples.1.downsamples.2.time_conv.weight": (320, 320, 3, 1, 1),
        "encoder.middle.1.to_qkv.weight": (1920, 640, 1, 1),
        "encoder.head.2.weight": (96, 640, 3, 3, 3),
        "conv1.weight": (96, 96, 1, 1, 1),
        "conv2.weight": (48, 48, 1, 1, 1),
        "decoder.conv1.weight": (1024, 48, 3, 3, 3),
        "decoder.upsamples.0.upsamples.3.time_conv.weight": (2048, 1024, 3, 1, 1),
        "decoder.upsamples.0.upsamples.3.resample.1.weight": (1024, 1024, 3, 3),
        "decoder.upsamples.2.upsamples.0.shortcut.weight": (512, 1024, 1, 1, 1),
        "decoder.upsamples.3.upsamples.2.residual.6.weight": (256, 256, 3, 3, 3),
        "decoder.head.2.weight": (12, 256, 3, 3, 3),
    }
    assert_shapes(params, expected)
    assert "decoder.upsamples.2.upsamples.3.time_conv.weight" not in params   # 2D-only stage
    assert not any(k.startswith("decoder.upsamples.3.upsamples.3") for k in params)  # no resample
