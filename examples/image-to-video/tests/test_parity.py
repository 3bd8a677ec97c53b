"""Each sampling mode against its reference implementation (issue 30, README.md "Sampling modes"):
the tiny A14B config on the CPU in fp32, the same seed, image, prompt states and weights (the
distilled mode: a tiny rank-4 adapter per expert in the published Lightning layout, written here).
Asserted: final latent relative L2 <= 1e-5, the same timesteps given to the model, the same expert
at each step, the same (step, branch) forwards skipped, the same MagCache calibration table.

Where the reference runs: with WAN_REFERENCE set to a folder prepared by
`tests/reference_setup.sh` (the fetched Wan2.2, Wan2.2-Lightning and MagCache checkouts and their
pip packages; see the script), the references run live through tests/reference_harness.py. CI has
no network and the repository holds no reference code, so without WAN_REFERENCE the example is
compared with what the references produced in such a run, recorded in tests/fixtures/parity/
(`WAN_PARITY_RECORD=1` rewrites them from a live run). The recording also holds a fingerprint of
the tiny weights, adapters and inputs, so a change to those says so instead of failing obscurely."""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from tiny_checkpoint import write_tiny_adapters
from wan.inputs import DISTILLED_DEFAULTS
from wan.loader import load_components
from wan.pipeline import generate
from wan.stepcache import A14B_I2V_MAG_RATIOS, MagCacheParams
from wan.modes import Mode
from wan.config import TINY

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "parity")
PROMPT, SEED, FRAMES, AREA = "a cat turns its head", 42, 9, 64 * 64
MODES = {
    # the authors' A14B 40-step setting (guidance 3.5 on both experts, shift 5, UniPC)
    "standard": dict(steps=40, guidance=3.5, shift=5.0, solver="unipc"),
    "cached": dict(steps=40, guidance=3.5, shift=5.0, solver="unipc"),
    # the distilled deployment's defaults (the distillation authors' config)
    "distilled": dict(steps=DISTILLED_DEFAULTS["num_inference_steps"], guidance=DISTILLED_DEFAULTS["guidance"],
                      shift=DISTILLED_DEFAULTS["flow_shift"], solver="distilled-euler"),
}
REFERENCE = {"standard": "wan22", "cached": "wan22", "distilled": "lightning"}


def _image():
    return np.random.default_rng(3).integers(0, 256, (48, 72, 3), dtype=np.uint8)


def _fingerprint(*tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().float().numpy().tobytes())
    return h.hexdigest()[:16]


def run_example(mode, tmp_path, monkeypatch):
    """The example's run of `mode`, and what the reference needs to run the same job."""
    m = MODES[mode]
    adapters = write_tiny_adapters(str(tmp_path / "adapters")) if mode == "distilled" else None
    c = load_components("tiny", device=torch.device("cpu"), dtype=torch.float32, adapters=adapters)
    texts, states, vae_io = [], [], {}
    encode, vae_encode, tokenizer = c.t5.encode, c.vae.encode, c.tokenizer

    def tokenize(text):
        texts.append(text)
        return tokenizer(text)

    def vae(video):
        latent = vae_encode(video)
        vae_io.update(video=video[0].clone(), latent=latent[0])
        return latent

    monkeypatch.setattr(c, "tokenizer", tokenize)
    monkeypatch.setattr(c.t5, "encode", lambda ids: states.extend(encode(ids)) or states[-len(ids):])
    monkeypatch.setattr(c.vae, "encode", vae)
    cache = Mode("cached", m["solver"], MagCacheParams()).step_cache(TINY, m["steps"], m["shift"]) if mode == "cached" else None
    image = _image()
    res = generate(c, image, PROMPT, "", FRAMES, m["steps"], m["guidance"], m["shift"], SEED, m["solver"],
                   area=AREA, step_cache=cache)
    if TINY.negative_prompt not in texts:   # unguided: the reference encodes it all the same
        texts.append(TINY.negative_prompt)
        states.extend(encode([tokenizer(TINY.negative_prompt)]))
    job = {
        "mode": mode, "prompt": PROMPT, "negative_prompt": "", "seed": SEED, "frames": FRAMES, "area": AREA,
        "steps": m["steps"], "guidance": m["guidance"], "shift": m["shift"],
        "solver": "unipc" if mode != "distilled" else "euler",
        "image": image, "texts": dict(zip(texts, states)),
        "latent_y": vae_io["latent"], "experts": [e.state_dict() for e in load_components(
            "tiny", device=torch.device("cpu"), dtype=torch.float32).experts],
        "adapters": adapters, "magcache": MagCacheParams().__dict__ if mode == "cached" else None,
        "model_kwargs": dict(model_type="i2v", patch_size=(1, 2, 2), text_len=512, in_dim=36, dim=24, ffn_dim=32,
                             freq_dim=256, text_dim=32, out_dim=16, num_heads=2, num_layers=2),
    }
    adapter_tensors = []
    for p in adapters or []:
        from wan.weights import iter_safetensors
        adapter_tensors += [t for _, t in sorted(iter_safetensors(p))]
    # weights and inputs only: computed values vary in their last bits with CPU threading
    weights = [t for s in job["experts"] + [c.t5.state_dict(), c.vae.state_dict()] for _, t in sorted(s.items())]
    fp = _fingerprint(*weights, *adapter_tensors, torch.from_numpy(image),
                      torch.tensor(list(json.dumps([PROMPT, SEED, FRAMES, AREA, m]).encode())))
    return res, vae_io["video"], job, fp


def run_reference(job, tmp_path):
    root = os.environ["WAN_REFERENCE"]
    src = os.path.join(root, REFERENCE[job["mode"]])
    inp, out = tmp_path / "job.pt", tmp_path / "ref.pt"
    torch.save(job, inp)
    cmd = [sys.executable, os.path.join(HERE, "reference_harness.py"), "--ref", src,
           "--deps", os.path.join(root, "deps"), str(inp), str(out)]
    if job["mode"] == "cached":
        cmd[2:2] = ["--magcache", os.path.join(root, "magcache", "MagCache4Wan2.2", "magcache_generate.py")]
    subprocess.run(cmd, check=True, timeout=600, env={**os.environ, "PYTHONPATH": ""})
    ref = torch.load(out)
    recs = ref["records"]
    per_step = len(recs) // ref["steps"]   # forwards per step: 2 guided, 1 unguided
    return {
        "latent": ref["latent"].numpy(),
        "timesteps": [r["t"] for r in recs[::per_step]],
        "experts": [r["expert"] for r in recs[::per_step]],
        "skipped": [[i // per_step, i % per_step] for i, r in enumerate(recs) if not r["ran"]],
        "mag_ratios": ref["mag_ratios"],
        "video": [float(ref["video"].double().sum()), float(ref["video"].double().norm())],
        "settings": [ref["steps"], ref["shift"], list(ref["guidance"]) if isinstance(ref["guidance"], tuple) else ref["guidance"], ref["solver"]],
    }


def _load_fixture(mode):
    path = os.path.join(FIXTURES, f"{mode}.json")
    with open(path) as f:
        rec = json.load(f)
    rec["latent"] = np.load(os.path.join(FIXTURES, f"{mode}.npy"))
    return rec


def _save_fixture(mode, ref, fp):
    os.makedirs(FIXTURES, exist_ok=True)
    np.save(os.path.join(FIXTURES, f"{mode}.npy"), ref["latent"].astype(np.float32))
    with open(os.path.join(FIXTURES, f"{mode}.json"), "w") as f:
        json.dump({**{k: v for k, v in ref.items() if k != "latent"}, "inputs": fp}, f, indent=1)


@pytest.mark.parametrize("mode", list(MODES))
def test_mode_matches_its_reference(mode, tmp_path, monkeypatch):
    res, video, job, fp = run_example(mode, tmp_path, monkeypatch)
    if os.environ.get("WAN_REFERENCE"):
        ref = run_reference(job, tmp_path)
        if os.environ.get("WAN_PARITY_RECORD") == "1":
            _save_fixture(mode, ref, fp)
    else:
        ref = _load_fixture(mode)
        assert ref["inputs"] == fp, ("the tiny weights, adapters or inputs changed since the reference run was "
                                     "recorded: rerun with WAN_REFERENCE and WAN_PARITY_RECORD=1 (tests/reference_setup.sh)")
    ours = res.latent.numpy()
    rel = np.linalg.norm(ours - ref["latent"]) / np.linalg.norm(ref["latent"])
    print(f"{mode}: final latent rel-L2 {rel:.2e}, {res.forwards} forwards, skipped {res.skipped}")
    assert rel <= 1e-5
    assert [float(t) for t in res.timesteps] == ref["timesteps"]
    assert res.experts_used == ref["experts"]
    assert [list(s) for s in res.skipped] == ref["skipped"]
    # the reference's image preprocessing gave the VAE the example's first-frame video
    ours_video = [float(video.double().sum()), float(video.double().norm())]
    assert np.allclose(ours_video, ref["video"], rtol=1e-6)
    if mode == "cached":
        assert ref["mag_ratios"] == A14B_I2V_MAG_RATIOS and len(ref["skipped"]) > 0
    if mode == "distilled":   # the reference's defaults are the distilled deployment's
        assert ref["settings"] == [MODES[mode]["steps"], MODES[mode]["shift"], [1.0, 1.0], "euler"]
        assert res.forwards == 4
