"""The whole tiny pipeline in process, through the endpoint function; videos measured by decoding."""
import base64
import http.server
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from svc import InputValidationError


@pytest.fixture(scope="module")
def image_url():
    from images import data_url, test_card
    return data_url(test_card())


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("WAN_CONFIG", "tiny")
    monkeypatch.setenv("SVC_OUTPUT_DIR", str(tmp_path / "out"))
    monkeypatch.delenv("SVC_WORKER_ID", raising=False)
    monkeypatch.delenv("WAN_PROMPT_OPTIMIZER", raising=False)
    monkeypatch.delenv("WAN_SAFETY_CHECKER", raising=False)
    return monkeypatch


def _path(url):
    assert url.startswith("file://")
    return url[len("file://"):]


def test_tiny_endpoint_produces_h264(env, image_url):
    import main
    from wan.media import probe_video
    out = main.generate(prompt="a test card slowly zooms", image=image_url, num_inference_steps=4,
                        seed=-1, duration=5)
    info = probe_video(_path(out["video_url"]))
    assert info == {"frames": 9, "width": 80, "height": 48, "fps": 16.0, "codec": "h264",
                    "pix_fmt": "yuv420p"}
    assert (out["frames"], out["width"], out["height"], out["fps"]) == (9, 80, 48, 16)
    assert 0 <= out["seed"] < 2 ** 63
    assert set(out["timings"]) - {"load"} == {"text_encode", "image_encode", "denoise", "decode", "encode_video"}
    assert all(v >= 0 for v in out["timings"].values())
    w = " ".join(out["warnings"])
    assert "random weights" in w and "at most 9 frames" in w
    assert "enable_safety_checker: no safety checker is configured" in w


def test_portrait_size_and_short_duration(env, image_url):
    import main
    from wan.media import probe_video
    out = main.generate(prompt="x", image=image_url, size="480*832", duration=1,
                        num_inference_steps=2, seed=1, enable_safety_checker=False)
    # the aspect follows the (landscape) image, not the size string; tiny area 64x64
    assert (out["width"], out["height"]) == (80, 48)
    assert probe_video(_path(out["video_url"]))["frames"] == 9
    assert out["warnings"] and not any("safety" in w for w in out["warnings"])


def test_seed_determinism_and_expert_switch():
    from wan.loader import load_components
    from wan.pipeline import generate
    c = load_components("tiny")
    rgb = np.full((32, 48, 3), 128, np.uint8)
    rgb[:, :24] = 250
    a = generate(c, rgb, "p", "", 9, 6, 5.0, 5.0, seed=11)
    b = generate(c, rgb, "p", "", 9, 6, 5.0, 5.0, seed=11)
    d = generate(c, rgb, "p", "", 9, 6, 5.0, 5.0, seed=12)
    assert a.frames.shape == (9, 32, 48, 3) and a.frames.dtype == np.uint8
    assert np.array_equal(a.frames, b.frames) and not np.array_equal(a.frames, d.frames)
    # UniPC, shift 5, 6 steps: t = 999, 961, 908, 833, 713, 499 → high-noise for t >= 900
    assert a.experts_used == [0, 0, 0, 1, 1, 1]
    assert c.experts[0] is not c.experts[1]
    g = generate(c, rgb, "p", "", 9, 6, 1.0, 5.0, seed=11)
    assert not np.array_equal(a.frames, g.frames)   # guidance changes the result


def test_bad_input_fails_naming_the_field(env, image_url):
    import main
    with pytest.raises(InputValidationError, match="^num_inference_steps:"):
        main.generate(prompt="x", image=image_url, num_inference_steps=51)
    with pytest.raises(InputValidationError, match="^image:"):
        main.generate(prompt="x", image="data:image/png;base64,bm90IGFuIGltYWdl")
    with pytest.raises(InputValidationError, match="^prompt:"):
        main.generate(image=image_url)


def test_missing_weights_fail_clearly(env, image_url, tmp_path):
    import main
    env.setenv("WAN_CONFIG", "wan2.2-i2v-a14b")
    env.setenv("WAN_CHECKPOINT_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(RuntimeError, match="not found under .*nowhere"):
        main.generate(prompt="x", image=image_url)


def test_hooks_run_when_configured(env, image_url):
    import hooks_fixture
    import main
    from wan.hooks import ContentFlagged
    env.setenv("WAN_PROMPT_OPTIMIZER", "hooks_fixture:optimize")
    env.setenv("WAN_SAFETY_CHECKER", "hooks_fixture:never_flag")
    hooks_fixture.CALLS.clear()
    out = main.generate(prompt="a dog", image=image_url, num_inference_steps=1, seed=2,
                        enable_prompt_optimization=True)
    assert out["prompt"] == "a dog, cinematic" and out["safety"] == {"checked": True, "flagged": False}
    assert [c[0] for c in hooks_fixture.CALLS] == ["optimize", "check"]
    assert hooks_fixture.CALLS[1][1] == (9, 48, 80, 3)
    assert not any("safety" in w or "optimi" in w for w in out["warnings"])
    env.setenv("WAN_SAFETY_CHECKER", "hooks_fixture:always_flag")
    with pytest.raises(ContentFlagged):
        main.generate(prompt="a dog", image=image_url, num_inference_steps=1, seed=2)


def test_prompt_optimization_without_optimizer_warns(env, image_url):
    import main
    out = main.generate(prompt="a dog", image=image_url, num_inference_steps=1, seed=2,
                        enable_prompt_optimization=True, enable_safety_checker=False)
    assert any(w.startswith("enable_prompt_optimization: no prompt optimizer") for w in out["warnings"])
    assert "prompt" not in out


def test_http_fetch_with_size_limit(image_url):
    from wan.inputs import InputError
    from wan.media import fetch_image
    png = base64.b64decode(image_url.split(",", 1)[1])

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = png if self.path == "/ok.png" else b"x" * 5000
            code = 404 if self.path == "/missing" else 200
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_port}"
    try:
        assert fetch_image(base + "/ok.png") == png
        with pytest.raises(InputError, match="larger than"):
            fetch_image(base + "/big", max_bytes=4096)
        with pytest.raises(InputError, match="HTTP 404"):
            fetch_image(base + "/missing")
    finally:
        srv.shutdown()


def test_bf16_pipeline_with_clip_branch():
    import torch
    from wan.loader import load_components
    from wan.pipeline import generate
    c = load_components("tiny-2.1", device=torch.device("cpu"), dtype=torch.bfloat16)
    assert c.clip is not None and c.experts[0].patch_embedding.weight.dtype == torch.bfloat16
    rgb = np.zeros((48, 32, 3), np.uint8)
    r = generate(c, rgb, "p", "", 5, 2, 4.0, 3.0, seed=0, solver="euler")
    assert r.frames.shape == (5, 48, 32, 3) and r.experts_used == [0, 0]


def test_model_receives_the_integer_timesteps(monkeypatch):
    import torch
    from wan.loader import load_components
    from wan.pipeline import generate
    from wan.scheduler import Schedule
    c = load_components("tiny")
    seen = []
    for expert in c.experts:
        orig = expert.forward
        def spy(x, t, *a, _orig=orig, **k):
            seen.append(t)
            return _orig(x, t, *a, **k)
        monkeypatch.setattr(expert, "forward", spy)
    generate(c, np.zeros((32, 32, 3), np.uint8), "p", "", 5, 4, 5.0, 3.0, seed=0)
    assert all(t.dtype == torch.int64 for t in seen)
    assert [int(t[0]) for t in seen] == Schedule(4, 3.0).timesteps == [999, 899, 749, 499]


def test_tiny_5b_endpoint_is_24_fps(env, image_url):
    import main
    from wan.media import probe_video
    env.setenv("WAN_CONFIG", "tiny-5b")
    out = main.generate(prompt="x", image=image_url, num_inference_steps=2, seed=3,
                        enable_safety_checker=False)
    assert (out["model"], out["fps"], out["frames"], out["width"], out["height"]) == \
        ("tiny-5b", 24, 9, 128, 64)
    info = probe_video(_path(out["video_url"]))
    assert (info["fps"], info["frames"], info["codec"]) == (24.0, 9, "h264")


def test_5b_720p_means_1280x704_and_121_frames():
    from wan.config import get_config
    from wan.inputs import validate
    from wan.service import _frames_and_area
    req = validate(prompt="p", image="data:,x", seed=1)
    assert _frames_and_area(get_config("wan2.2-ti2v-5b"), req) == (121, 1280 * 704)
    assert _frames_and_area(get_config("wan2.2-i2v-a14b"), req) == (81, 1280 * 720)
    small = validate(prompt="p", image="data:,x", seed=1, size="832*480", duration=8)
    assert _frames_and_area(get_config("wan2.2-ti2v-5b"), small) == (193, 832 * 480)


def test_runs_with_no_ffmpeg_on_path(image_url, tmp_path):
    """The worker image has no ffmpeg binary: decoding and encoding come from the artifact."""
    import json
    code = ("import json, main; out = main.generate(prompt='p', image=%r, num_inference_steps=1, seed=1,"
            " enable_safety_checker=False); print(json.dumps([out['frames'], out['width'], out['fps']]))"
            % image_url)
    env = {"PATH": str(tmp_path), "WAN_CONFIG": "tiny", "SVC_OUTPUT_DIR": str(tmp_path / "out"),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(os.path.dirname(__file__)),
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [9, 80, 16]


def test_the_first_job_of_a_process_reports_the_model_load(env, image_url):
    import main
    from wan import loader
    loader._CACHE.clear()
    first = main.generate(prompt="x", image=image_url, num_inference_steps=1, seed=1, enable_safety_checker=False)
    again = main.generate(prompt="x", image=image_url, num_inference_steps=1, seed=1, enable_safety_checker=False)
    assert first["timings"]["load"] > 0
    assert "load" not in again["timings"]
