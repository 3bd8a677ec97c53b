"""save_output_file in both modes (contracts section 6)."""
from pathlib import Path

import pytest

from svc import save_output_file


@pytest.fixture
def video(tmp_path: Path) -> Path:
    path = tmp_path / "clip.mp4"
    path.write_bytes(b"\x00\x01video")
    return path


def test_outside_a_worker_copies_under_output_dir(monkeypatch, tmp_path, video):
    monkeypatch.delenv("SVC_WORKER_ID", raising=False)
    monkeypatch.setenv("SVC_OUTPUT_DIR", str(tmp_path / "out"))
    url = save_output_file(video)
    target = tmp_path / "out" / "clip.mp4"
    assert url == target.resolve().as_uri() and url.startswith("file://")
    assert target.read_bytes() == b"\x00\x01video"
    assert save_output_file(str(video), name="renamed.mp4").endswith("/out/renamed.mp4")


def test_default_output_dir_is_outputs_in_the_cwd(monkeypatch, tmp_path, video):
    monkeypatch.delenv("SVC_WORKER_ID", raising=False)
    monkeypatch.delenv("SVC_OUTPUT_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert save_output_file(video) == (tmp_path / "outputs" / "clip.mp4").resolve().as_uri()


def test_inside_a_worker_uploads_to_the_platform(monkeypatch, platform, video):
    info = platform.register_worker("echo")
    for key, value in platform.worker_env(info["id"]).items():
        monkeypatch.setenv(key, value)
    url = save_output_file(video, name="out.mp4")
    (stored,) = platform.files.values()
    assert url.startswith(f"{platform.base}/v2/files/") and url.endswith("/out.mp4")
    assert stored == {"name": "out.mp4", "data": b"\x00\x01video", "type": "video/mp4"}
    save_output_file(video, content_type="application/x-custom")
    assert [f["type"] for f in platform.files.values()][-1] == "application/x-custom"


def test_upload_refused_raises(monkeypatch, platform, video):
    info = platform.register_worker("echo")
    for key, value in platform.worker_env(info["id"]).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SVC_WORKER_TOKEN", "wrong")
    with pytest.raises(RuntimeError, match="HTTP 401"):
        save_output_file(video)


def test_bad_name_and_missing_file(tmp_path, video):
    with pytest.raises(ValueError, match="plain file name"):
        save_output_file(video, name="../x.mp4")
    with pytest.raises(FileNotFoundError):
        save_output_file(tmp_path / "missing.bin")
