"""_locate: where a caller outside the workers finds the platform, its key and the endpoints (as the CLI does)."""
import json
import os

import pytest

from svc import _locate


@pytest.fixture
def project(tmp_path, monkeypatch):
    for name in ("PLATFORM_API_URL", "PLATFORM_API_KEY", "SVC_API_BASE", "SVC_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SVC_PLATFORM_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def deployed(root, env, platform, when, urls):
    folder = root / ".svc" / "deployments"
    folder.mkdir(parents=True, exist_ok=True)
    state = {"version": 1, "app": "a", "environment": env, "platform": platform, "buildId": "b", "deployedAt": when, "urls": urls, "manifest": {}}
    (folder / f"{env}.json").write_text(json.dumps(state))


def embedded(root, url=None, key="svc_embedded"):
    (root / "state").mkdir(exist_ok=True)
    (root / "state" / "api-key").write_text(key + "\n")
    if url:
        (root / "state" / "platform.json").write_text(json.dumps({"pid": os.getpid(), "url": url, "startedAt": "x"}))


def test_the_newest_deploy_state_with_the_state_folders_key_for_a_loopback_platform(project):
    deployed(project, "staging", "http://127.0.0.1:9001", "2026-01-01T00:00:00Z", {"sq": "http://127.0.0.1:9001/v2/s"})
    deployed(project, "production", "http://127.0.0.1:9002", "2026-02-01T00:00:00Z", {"sq": "http://127.0.0.1:9002/v2/p"})
    embedded(project)
    found = _locate.locate()
    assert (found.url, found.key, found.urls) == ("http://127.0.0.1:9002", "svc_embedded", {"sq": "http://127.0.0.1:9002/v2/p"})
    assert found.source.endswith("production.json")


def test_svc_env_picks_the_environment_and_an_exported_key_wins(project, monkeypatch):
    deployed(project, "staging", "https://api.example.com", "2026-01-01T00:00:00Z", {"sq": "https://api.example.com/v2/s"})
    deployed(project, "production", "https://api.example.com", "2026-02-01T00:00:00Z", {"sq": "https://api.example.com/v2/p"})
    embedded(project)
    monkeypatch.setenv("SVC_ENV", "staging")
    found = _locate.locate()
    assert found.urls == {"sq": "https://api.example.com/v2/s"} and found.key is None  # not the embedded platform: its key is not sent
    assert "PLATFORM_API_KEY is unset" in found.advice()
    monkeypatch.setenv("PLATFORM_API_KEY", "user-key")
    assert _locate.locate().key == "user-key"


def test_platform_api_url_comes_first_and_is_asked(project, monkeypatch):
    deployed(project, "production", "http://127.0.0.1:9002", "2026-02-01T00:00:00Z", {"sq": "x"})
    embedded(project, url="http://127.0.0.1:8787")
    monkeypatch.setenv("PLATFORM_API_URL", "http://127.0.0.1:8787/")
    found = _locate.locate()
    assert (found.url, found.key, found.urls) == ("http://127.0.0.1:8787", "svc_embedded", None)


def test_the_running_embedded_platform_when_nothing_was_deployed_from_here(project):
    embedded(project, url="http://127.0.0.1:8787")
    found = _locate.locate()
    assert (found.url, found.key, found.urls) == ("http://127.0.0.1:8787", "svc_embedded", None)


def test_nothing_found_says_where_it_looked_and_what_to_export(project):
    advice = _locate.locate().advice()
    assert "PLATFORM_API_URL (unset)" in advice and "no deploy state" in advice and "not running" in advice
    assert "export PLATFORM_API_URL and PLATFORM_API_KEY" in advice
