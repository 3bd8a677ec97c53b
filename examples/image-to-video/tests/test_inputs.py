import pytest

from svc import InputValidationError
from wan.inputs import DEFAULTS, InputError, compute_size, frames_for, validate

IMG = "data:image/png;base64,AAAA"


def ok(**kw):
    base = {"prompt": "a cat", "image": IMG}
    base.update(kw)
    return validate(**base)


def bad(field, **kw):
    with pytest.raises(InputError) as e:
        ok(**kw)
    assert e.value.field == field
    assert str(e.value).startswith(field + ":")
    assert isinstance(e.value, InputValidationError) and isinstance(e.value, ValueError)


def test_defaults():
    r = ok(seed=3)
    assert (r.negative_prompt, r.size, r.num_inference_steps, r.guidance, r.duration, r.flow_shift) == \
        ("", "1280*720", 30, 5.0, 5, 5.0)
    assert r.enable_prompt_optimization is False and r.enable_safety_checker is True
    assert frames_for(r.duration, 16) == 81 and r.area == 1280 * 720 and r.seed == 3 and not r.seed_was_random
    assert DEFAULTS["seed"] == -1


def test_required_fields():
    bad("prompt", prompt=None)
    bad("prompt", prompt="   ")
    bad("prompt", prompt=5)
    bad("image", image=None)
    bad("image", image="ftp://x/y.png")
    bad("image", image="/etc/passwd")
    assert ok(image="https://example.com/a.jpg").image == "https://example.com/a.jpg"


def test_size():
    for s in ("1280*720", "720*1280", "832*480", "480*832"):
        assert ok(size=s).size == s
    bad("size", size="1280x720")
    bad("size", size="1920*1080")
    bad("size", size=1280)


def test_steps_bounds():
    assert ok(num_inference_steps=1).num_inference_steps == 1
    assert ok(num_inference_steps=50).num_inference_steps == 50
    assert ok(num_inference_steps=20.0).num_inference_steps == 20
    bad("num_inference_steps", num_inference_steps=0)
    bad("num_inference_steps", num_inference_steps=51)
    bad("num_inference_steps", num_inference_steps=2.5)
    bad("num_inference_steps", num_inference_steps="30")
    bad("num_inference_steps", num_inference_steps=True)


def test_guidance_bounds():
    assert ok(guidance=0).guidance == 0.0
    assert ok(guidance=10).guidance == 10.0
    bad("guidance", guidance=-0.1)
    bad("guidance", guidance=10.5)
    bad("guidance", guidance=float("nan"))
    bad("guidance", guidance="5")


def test_duration_and_frames():
    assert [frames_for(d, 16) for d in (1, 5, 8, 10, 15)] == [17, 81, 129, 161, 241]
    assert [frames_for(d, 24) for d in (1, 5, 8, 10, 15)] == [25, 121, 193, 241, 361]
    assert all((frames_for(d, f) - 1) % 4 == 0 for d in range(1, 16) for f in (16, 24))
    assert ok(duration=15).duration == 15
    bad("duration", duration=0)
    bad("duration", duration=16)
    bad("duration", duration=2.5)


def test_flow_shift_bounds():
    assert ok(flow_shift=20).flow_shift == 20.0
    assert ok(flow_shift=0.5).flow_shift == 0.5
    bad("flow_shift", flow_shift=0)
    bad("flow_shift", flow_shift=20.01)
    bad("flow_shift", flow_shift=None and 1 or "x")


def test_seed():
    seeds = [ok(seed=-1) for _ in range(8)]
    assert all(r.seed_was_random and 0 <= r.seed <= 2 ** 63 - 1 for r in seeds)
    assert max(r.seed for r in seeds) >= 2 ** 32   # the authors' range, not a 32-bit one
    assert ok(seed=0).seed == 0
    assert ok(seed=2 ** 63 - 1).seed == 2 ** 63 - 1
    bad("seed", seed=-2)
    bad("seed", seed=2 ** 63)
    bad("seed", seed="1")


def test_booleans():
    assert ok(enable_prompt_optimization=True).enable_prompt_optimization is True
    assert ok(enable_safety_checker=False).enable_safety_checker is False
    bad("enable_prompt_optimization", enable_prompt_optimization=1)
    bad("enable_safety_checker", enable_safety_checker="false")


def test_negative_prompt():
    assert ok(negative_prompt="blurry").negative_prompt == "blurry"
    bad("negative_prompt", negative_prompt=["x"])


def test_compute_size_area_and_aspect():
    assert compute_size(1280 * 720, 720, 1280) == (720, 1280)      # 16:9 → exact 720p
    assert compute_size(1280 * 720, 1280, 720) == (1280, 720)      # portrait image
    assert compute_size(1280 * 720, 1000, 1000) == (960, 960)      # square keeps the area
    assert compute_size(832 * 480, 1080, 1920) == (464, 832)
    assert compute_size(480 * 832, 1920, 1080) == (832, 464)
    h, w = compute_size(1280 * 720, 3000, 4000)                    # 4:3
    assert h % 16 == 0 and w % 16 == 0 and h * w <= 1280 * 720 and abs(h / w - 0.75) < 0.03
