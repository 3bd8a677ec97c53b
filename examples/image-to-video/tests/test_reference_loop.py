"""The sampling loop follows the authors' reference: noise from the seed on the model's device,
the first frame prepared from float pixels, CLIP fed the image at its own size, precisions and
the output conversion (README.md, "Fidelity to the reference")."""
import numpy as np
import pytest
import torch

from wan.image import image_tensor, resize_bicubic, video_to_uint8
from wan.loader import clip_dtype, load_components
from wan.pipeline import generate


def _spy(monkeypatch, module, calls):
    orig = module.forward
    def spy(*a, **k):
        calls.append(a)
        return orig(*a, **k)
    monkeypatch.setattr(module, "forward", spy)


def _rgb(h=48, w=72):
    g = np.random.default_rng(0)
    return g.integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_noise_comes_from_the_seed_on_the_model_device(monkeypatch):
    c = load_components("tiny")
    calls = []
    _spy(monkeypatch, c.experts[0], calls)
    generate(c, _rgb(), "p", "", 5, 2, 5.0, 5.0, seed=2 ** 40 + 7, area=32 * 48)
    x = calls[0][0]
    gen = torch.Generator(device=c.device).manual_seed(2 ** 40 + 7)
    expected = torch.randn(16, 2, 4, 6, generator=gen, device=c.device)
    assert torch.equal(x[0, :16], expected) and torch.equal(x[1, :16], expected)


def test_clip_gets_the_image_at_its_own_size_and_vae_the_bicubic_frame(monkeypatch):
    c = load_components("tiny-2.1")
    rgb = _rgb(48, 72)
    clip_calls, vae_calls = [], []
    _spy(monkeypatch, c.clip, clip_calls)
    orig_encode = c.vae.encode
    monkeypatch.setattr(c.vae, "encode", lambda v: vae_calls.append(v) or orig_encode(v))
    generate(c, rgb, "p", "", 5, 1, 5.0, 5.0, seed=0, area=32 * 48)
    image = image_tensor(rgb)
    assert torch.equal(clip_calls[0][0][0].cpu(), image)         # 48x72, not the 32x48 frame
    first = vae_calls[0][0, :, 0].cpu()
    assert first.shape == (3, 32, 48) and torch.equal(first, resize_bicubic(image, 32, 48))
    assert torch.all(vae_calls[0][0, :, 1:].cpu() == 0)


def test_first_frame_is_prepared_from_float_pixels():
    rgb = np.array([[[0, 128, 255]]], np.uint8)
    x = image_tensor(rgb)[:, 0, 0]
    assert x.tolist() == [-1.0, (torch.tensor(128.0) / 255 - 0.5).div(0.5).item(), 1.0]
    edge = np.zeros((8, 8, 3), np.uint8)
    edge[:, 4:] = 255
    up = resize_bicubic(image_tensor(edge), 16, 16)
    assert up.min() < -1 and up.max() > 1   # float bicubic overshoots; a uint8 resize could not


def test_output_is_truncated_not_rounded():
    v = torch.tensor([-2.0, -1.0, 0.0, 0.999, 1.0, 5.0]).view(1, 6, 1, 1).expand(3, 6, 1, 1)
    out = video_to_uint8(v)[:, 0, 0, 0].tolist()
    assert out == [0, 0, 127, 254, 255, 255]   # 127.5 → 127, 254.87 → 254


def test_precisions_follow_the_reference():
    assert clip_dtype(torch.device("cuda"), torch.bfloat16) == torch.float16
    assert clip_dtype(torch.device("cpu"), torch.float32) == torch.float32
    c = load_components("tiny-2.1", device=torch.device("cpu"), dtype=torch.bfloat16)
    assert c.vae.conv1.weight.dtype == torch.float32
    assert c.t5.token_embedding.weight.dtype == torch.bfloat16
    # bf16 weights: matmuls under autocast, but the gated residual sums make the stream fp32
    block = c.experts[0].blocks[0]
    x = torch.randn(1, 6, 24, dtype=torch.bfloat16)
    e0 = torch.randn(1, 1, 6, 24)
    cos, sin = c.experts[0]._rope(1, 2, 3, torch.device("cpu"))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = block(x, e0, torch.randn(1, 512, 24, dtype=torch.bfloat16), cos, sin)
    assert out.dtype == torch.float32


@pytest.mark.parametrize("name,prefix", [("tiny", "色调艳丽"), ("tiny-2.1", "镜头晃动，色调艳丽")])
def test_empty_negative_prompt_is_the_models_own(monkeypatch, name, prefix):
    from wan.config import NEGATIVE_PROMPT, get_config
    c = load_components(name)
    texts = []
    orig = c.tokenizer
    monkeypatch.setattr(c, "tokenizer", lambda text: texts.append(text) or orig(text))
    generate(c, _rgb(), "a prompt", "", 5, 1, 5.0, 5.0, seed=0, area=32 * 48)
    assert texts[0] == "a prompt" and texts[1].startswith(prefix) and texts[1].endswith("倒着走")
    assert texts[1] == get_config(name).negative_prompt
    assert (texts[1] == NEGATIVE_PROMPT) == (name == "tiny")
    texts.clear()
    generate(c, _rgb(), "a prompt", "blurry", 5, 1, 5.0, 5.0, seed=0, area=32 * 48)
    assert texts == ["a prompt", "blurry"]


def test_configs_hold_nothing_unused():
    from dataclasses import fields
    from wan.config import ModelConfig
    names = {f.name for f in fields(ModelConfig)}
    assert not names & {"sample_steps", "guidance", "shift"}   # request fields, not model facts
