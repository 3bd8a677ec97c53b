"""The sampling mode through the endpoint function (wan/modes.py): the deployer's WAN_LORA and
WAN_STEP_CACHE, the request's num_inference_steps, guidance and enable_step_cache, and what the
response says about it (mode, steps, transformer_forwards, steps_computed)."""
import pytest

from svc import InputValidationError
from tiny_checkpoint import write_tiny_adapters
from wan.lora import AdapterError


@pytest.fixture(scope="module")
def image_url():
    from images import data_url, test_card
    return data_url(test_card())


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("WAN_CONFIG", "tiny")
    monkeypatch.setenv("SVC_OUTPUT_DIR", str(tmp_path / "out"))
    for name in ("SVC_WORKER_ID", "WAN_LORA", "WAN_STEP_CACHE", "WAN_MAGCACHE", "WAN_CHECKPOINT_DIR"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _run(image_url, **fields):
    import main
    return main.generate(prompt="a test card", image=image_url, seed=7, enable_safety_checker=False, **fields)


def test_distilled_deployment_defaults_to_four_unguided_steps(env, image_url, tmp_path):
    env.setenv("WAN_LORA", str(tmp_path / "lightning"))
    write_tiny_adapters(str(tmp_path / "lightning"))
    out = _run(image_url)
    assert (out["mode"], out["solver"], out["steps"], out["transformer_forwards"], out["steps_computed"]) == \
        ("distilled", "distilled-euler", 4, 4, 4)
    # guidance other than 1 guides (as the distillation authors' pipeline decides); steps as asked
    out = _run(image_url, guidance=3.5, num_inference_steps=6)
    assert (out["mode"], out["steps"], out["transformer_forwards"]) == ("distilled", 6, 12)
    out = _run(image_url, enable_step_cache=True)
    assert out["transformer_forwards"] == 4 and "enable_step_cache: the distilled mode" in " ".join(out["warnings"])


def test_standard_and_cached_forwards(env, image_url):
    out = _run(image_url, num_inference_steps=40, guidance=3.5)
    assert (out["mode"], out["transformer_forwards"], out["steps_computed"]) == ("standard", 80, 40)
    cached = _run(image_url, num_inference_steps=40, guidance=3.5, enable_step_cache=True)
    assert (cached["mode"], cached["transformer_forwards"], cached["steps_computed"]) == ("cached", 59, 33)
    env.setenv("WAN_STEP_CACHE", "1")
    assert _run(image_url, num_inference_steps=40, guidance=3.5)["mode"] == "cached"
    assert _run(image_url, num_inference_steps=40, guidance=3.5, enable_step_cache=False)["mode"] == "standard"
    env.setenv("WAN_MAGCACHE", "0,2,0.1")   # threshold 0: nothing is ever skipped
    assert _run(image_url, num_inference_steps=40, guidance=3.5)["transformer_forwards"] == 80


def test_a_model_without_a_table_runs_uncached_and_says_so(env, image_url):
    env.setenv("WAN_CONFIG", "tiny-5b")
    out = _run(image_url, num_inference_steps=3, enable_step_cache=True)
    assert out["mode"] == "standard" and out["transformer_forwards"] == 6
    assert "no MagCache calibration for tiny-5b" in " ".join(out["warnings"])


def test_bad_mode_settings_fail_clearly(env, image_url, tmp_path):
    with pytest.raises(InputValidationError, match="^enable_step_cache: must be true or false"):
        _run(image_url, enable_step_cache="yes")
    high, _ = write_tiny_adapters(str(tmp_path / "a"))
    env.setenv("WAN_LORA", high)
    with pytest.raises(AdapterError, match="names 1 adapter file.*2 expert"):
        _run(image_url)
    env.setenv("WAN_LORA", "")
    env.setenv("WAN_STEP_CACHE", "maybe")
    with pytest.raises(ValueError, match="WAN_STEP_CACHE must be 1 or 0"):
        _run(image_url)
