"""Validation of the request fields (hosted defaults and bounds; a distilled deployment's own
defaults, `DISTILLED_DEFAULTS`) and the size rule."""
import math
import random
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

try:  # the platform maps this class to HTTP 400
    from svc import InputValidationError as _InputBase
except ImportError:  # model code stays usable without the SDK
    _InputBase = ValueError


class InputError(_InputBase):
    """Bad request input; the message starts with the offending field's name."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


SIZES = ("1280*720", "720*1280", "832*480", "480*832")
MAX_PROMPT_CHARS = 4000
MAX_SEED = 2 ** 63 - 1   # the authors draw a random seed from [0, sys.maxsize]

DEFAULTS = {
    "negative_prompt": "",
    "size": "1280*720",
    "num_inference_steps": 30,
    "guidance": 5.0,
    "duration": 5,
    "flow_shift": 5.0,
    "seed": -1,
    "enable_prompt_optimization": False,
    "enable_safety_checker": True,
}

# A deployment whose experts carry the step-distillation adapters (WAN_LORA) samples as the
# distillation authors' pipeline does by default: 4 steps, no guidance, shift 5 (Wan2.2-Lightning's
# i2v-A14B config; LightX2V's 4-step configs: denoising_step_list [1000, 750, 500, 250], shift 5,
# enable_cfg false).
DISTILLED_DEFAULTS = {**DEFAULTS, "num_inference_steps": 4, "guidance": 1.0, "flow_shift": 5.0}


@dataclass
class Request:
    prompt: str
    image: str
    negative_prompt: str
    size: str
    num_inference_steps: int
    guidance: float
    duration: int
    flow_shift: float
    seed: int
    enable_prompt_optimization: bool
    enable_safety_checker: bool
    seed_was_random: bool = False
    enable_step_cache: Optional[bool] = None   # None: the deployment's choice (WAN_STEP_CACHE)

    @property
    def area(self) -> int:
        w, h = (int(v) for v in self.size.split("*"))
        return w * h


def frames_for(duration_s: int, fps: int) -> int:
    """Frame count 4n+1 nearest to duration·fps (+1 for the first frame): 5 s → 81 at 16 fps
    (the authors' 2.x default), 121 at 24 fps (their TI2V-5B default)."""
    return 4 * round(duration_s * fps / 4) + 1


def compute_size(area: int, img_h: int, img_w: int, stride: int = 8, patch: int = 2) -> Tuple[int, int]:
    """(h, w) of the output: the requested area with the input image's aspect ratio,
    rounded down to whole latent patches (multiples of stride·patch pixels)."""
    ar = img_h / img_w
    lat_h = round(math.sqrt(area * ar) // stride // patch * patch)
    lat_w = round(math.sqrt(area / ar) // stride // patch * patch)
    lat_h, lat_w = max(lat_h, patch), max(lat_w, patch)
    return lat_h * stride, lat_w * stride


def cover_size(area: int, img_h: int, img_w: int, stride: int = 16, patch: int = 2) -> Tuple[int, int]:
    """(h, w) of the TI2V-5B output: multiples of stride·patch within `area`, whose aspect is the
    closer to the image's of two candidates (width rounded first, or height first)."""
    unit = stride * patch
    ratio = img_w / img_h
    ow = (area * ratio) ** 0.5
    oh = area / ow
    w1 = int(ow // unit * unit)
    h1 = int(area / w1 // unit * unit)
    h2 = int(oh // unit * unit)
    w2 = int(area / h2 // unit * unit)
    r1, r2 = w1 / h1, w2 / h2
    if max(ratio / r1, r1 / ratio) < max(ratio / r2, r2 / ratio):
        return h1, w1
    return h2, w2


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(name, v, lo, hi):
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not _is_int(v):
        raise InputError(name, f"must be an integer, got {v!r}")
    if not lo <= v <= hi:
        raise InputError(name, f"must be between {lo} and {hi}, got {v}")
    return v


def _bool(name, v):
    if not isinstance(v, bool):
        raise InputError(name, f"must be true or false, got {v!r}")
    return v


def _text(name, v, required):
    if v is None and not required:
        return ""
    if not isinstance(v, str):
        raise InputError(name, f"must be a string, got {type(v).__name__}")
    if required and not v.strip():
        raise InputError(name, "is required and must not be empty")
    if len(v) > MAX_PROMPT_CHARS:
        raise InputError(name, f"is longer than {MAX_PROMPT_CHARS} characters")
    return v


def validate(prompt: Any = None, image: Any = None, negative_prompt: Any = None, size: Any = None,
             num_inference_steps: Any = None, guidance: Any = None, duration: Any = None,
             flow_shift: Any = None, seed: Any = None, enable_prompt_optimization: Any = None,
             enable_safety_checker: Any = None, enable_step_cache: Any = None,
             defaults: Optional[Dict[str, Any]] = None) -> Request:
    """Check every field; a missing (None) optional field takes the default (`defaults`: the
    deployment's mode's, else the hosted endpoint's)."""
    d = defaults or DEFAULTS
    prompt = _text("prompt", prompt, required=True)
    if not isinstance(image, str) or not image.strip():
        raise InputError("image", "is required: an http(s) or data: URL of the source image")
    image = image.strip()
    if not image.lower().startswith(("http://", "https://", "data:")):
        raise InputError("image", "Invalid image URL: must start with http://, https:// or data:")
    negative_prompt = _text("negative_prompt", negative_prompt, required=False)

    size = d["size"] if size is None else size
    if size not in SIZES:
        raise InputError("size", f"must be one of {', '.join(SIZES)}, got {size!r}")

    steps = _int("num_inference_steps", d["num_inference_steps"] if num_inference_steps is None
                 else num_inference_steps, 1, 50)

    guidance = d["guidance"] if guidance is None else guidance
    if not _is_num(guidance) or not 0 <= guidance <= 10:
        raise InputError("guidance", f"must be a number between 0 and 10, got {guidance!r}")

    duration = _int("duration", d["duration"] if duration is None else duration, 1, 15)

    flow_shift = d["flow_shift"] if flow_shift is None else flow_shift
    if not _is_num(flow_shift) or not 0 < flow_shift <= 20:
        raise InputError("flow_shift", f"must be a number with 0 < flow_shift <= 20, got {flow_shift!r}")

    seed = _int("seed", d["seed"] if seed is None else seed, -1, MAX_SEED)
    was_random = seed == -1
    if was_random:
        seed = random.SystemRandom().randint(0, MAX_SEED)

    opt = _bool("enable_prompt_optimization", d["enable_prompt_optimization"]
                if enable_prompt_optimization is None else enable_prompt_optimization)
    safe = _bool("enable_safety_checker", d["enable_safety_checker"]
                 if enable_safety_checker is None else enable_safety_checker)
    cache = None if enable_step_cache is None else _bool("enable_step_cache", enable_step_cache)
    return Request(prompt, image, negative_prompt, size, steps, float(guidance), duration,
                   float(flow_shift), seed, opt, safe, was_random, cache)
