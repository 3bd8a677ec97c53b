"""One image-to-video job end to end: validate → fetch image → (optimise prompt) → sample →
(safety check) → H.264 mp4 → output file. The endpoint function is a thin wrapper of `run_job`."""
import os
import time
import uuid
from typing import Any, Callable, Dict, Optional

from . import hooks
from .config import get_config
from .inputs import DISTILLED_DEFAULTS, frames_for, validate
from .modes import choose, deployment_adapters
from .media import encode_mp4, fetch_image, open_image, tempdir


def _frames_and_area(cfg, req):
    frames, area = frames_for(req.duration, cfg.fps), req.area
    if cfg.size_720p and area == 1280 * 720:
        area = cfg.size_720p  # TI2V-5B's 720p is 1280x704
    if cfg.tiny:
        frames = min(frames, cfg.tiny_max_frames)
        area = cfg.tiny_area
    return frames, area


def run_job(save_file: Callable[[str], str], config_name: Optional[str] = None,
            checkpoint_dir: Optional[str] = None, solver: Optional[str] = None,
            **fields: Any) -> Dict[str, Any]:
    """`fields` are the request fields; `save_file(path) -> url` stores the mp4."""
    from .loader import load_components  # torch is imported only when a job runs
    from .pipeline import generate

    t_start = time.perf_counter()
    config_name = config_name or os.environ.get("WAN_CONFIG", "wan2.2-i2v-a14b")
    checkpoint_dir = checkpoint_dir or os.environ.get("WAN_CHECKPOINT_DIR")
    cfg = get_config(config_name)
    adapters = deployment_adapters(cfg)
    req = validate(**fields, defaults=DISTILLED_DEFAULTS if adapters else None)
    mode = choose(cfg, bool(adapters), req.enable_step_cache, solver)
    warnings = list(mode.warnings)

    with tempdir() as work:
        rgb = open_image(fetch_image(req.image))
        frames, area = _frames_and_area(cfg, req)

        comps = load_components(cfg.name, checkpoint_dir, adapters=adapters)  # cached across jobs
        warnings += comps.warnings

        prompt = req.prompt
        if req.enable_prompt_optimization:
            opt = hooks.prompt_optimizer()
            if opt is None:
                warnings.append("enable_prompt_optimization: no prompt optimizer is configured "
                                "(set WAN_PROMPT_OPTIMIZER); the prompt was used as given")
            else:
                prompt = str(opt(prompt, rgb)) or prompt

        res = generate(comps, rgb, prompt, req.negative_prompt, frames, req.num_inference_steps,
                       req.guidance, req.flow_shift, req.seed, mode.solver, area=area,
                       step_cache=mode.step_cache(cfg, req.num_inference_steps, req.flow_shift))

        safety = {"checked": False}
        if req.enable_safety_checker:
            check = hooks.safety_checker()
            if check is None:
                warnings.append("enable_safety_checker: no safety checker is configured "
                                "(set WAN_SAFETY_CHECKER); the video was not checked")
            else:
                if hooks.is_flagged(check(res.frames)):
                    raise hooks.ContentFlagged("the generated video was flagged by the safety checker")
                safety = {"checked": True, "flagged": False}

        t0 = time.perf_counter()
        path = os.path.join(work, f"i2v-{uuid.uuid4().hex[:12]}.mp4")
        encode_mp4(res.frames, path, cfg.fps)
        res.timings["encode_video"] = round(time.perf_counter() - t0, 4)
        url = save_file(path)

    out = {
        "video_url": url,
        "seed": req.seed,
        "frames": int(res.frames.shape[0]),
        "width": int(res.frames.shape[2]),
        "height": int(res.frames.shape[1]),
        "fps": cfg.fps,
        "duration_s": round(res.frames.shape[0] / cfg.fps, 3),
        "model": cfg.name,
        "solver": mode.solver,
        "mode": mode.name,
        "steps": req.num_inference_steps,
        "transformer_forwards": res.forwards,
        "steps_computed": res.steps_computed,
        "prompt": prompt if prompt != req.prompt else None,
        "safety": safety,
        "timings": {k: res.timings.get(k, 0.0) for k in
                    ("text_encode", "image_encode", "denoise", "decode", "encode_video")},
        "total_s": round(time.perf_counter() - t_start, 3),
        "warnings": warnings,
    }
    if not comps.load_reported:  # the worker's first job says what loading the model cost
        out["timings"]["load"] = comps.load_s
        comps.load_reported = True
    if out["prompt"] is None:
        del out["prompt"]
    return out
