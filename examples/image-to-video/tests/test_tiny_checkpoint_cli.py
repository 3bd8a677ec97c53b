"""tiny_checkpoint.py's command line: `--help` prints the usage and writes nothing (it once wrote a
checkpoint into a folder named `--help`); a config it does not know is refused before anything is written."""
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny_checkpoint.py")


def run(tmp_path, *args):
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_help_prints_the_usage_and_writes_nothing(tmp_path):
    done = run(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: tiny_checkpoint.py [-h] [--adapters] folder" in done.stdout
    assert os.listdir(tmp_path) == []


def test_an_unknown_config_is_refused_before_anything_is_written(tmp_path):
    done = run(tmp_path, "out", "huge")
    assert done.returncode == 2 and "invalid choice: 'huge'" in done.stderr
    assert os.listdir(tmp_path) == []
