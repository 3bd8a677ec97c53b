"""Pluggable prompt optimisation and safety checking.

Each is a Python callable named by an env var as "package.module:function":
- WAN_PROMPT_OPTIMIZER: fn(prompt: str, image_rgb: numpy uint8 (H, W, 3)) -> str
- WAN_SAFETY_CHECKER:   fn(frames: numpy uint8 (F, H, W, 3)) -> bool | dict  (True / {"flagged": True} = unsafe)
Nothing configured → the step is skipped and the output's `warnings` says so."""
import importlib
import os
from typing import Callable, Optional


class ContentFlagged(RuntimeError):
    pass


def load_callable(spec: Optional[str], var: str) -> Optional[Callable]:
    if not spec:
        return None
    mod, sep, attr = spec.partition(":")
    if not sep or not mod or not attr:
        raise RuntimeError(f"{var}={spec!r}: expected 'package.module:function'")
    fn = importlib.import_module(mod)
    for part in attr.split("."):
        fn = getattr(fn, part)
    if not callable(fn):
        raise RuntimeError(f"{var}={spec!r} is not callable")
    return fn


def prompt_optimizer() -> Optional[Callable]:
    return load_callable(os.environ.get("WAN_PROMPT_OPTIMIZER"), "WAN_PROMPT_OPTIMIZER")


def safety_checker() -> Optional[Callable]:
    return load_callable(os.environ.get("WAN_SAFETY_CHECKER"), "WAN_SAFETY_CHECKER")


def is_flagged(result) -> bool:
    if isinstance(result, dict):
        return bool(result.get("flagged") or result.get("nsfw") or result.get("unsafe"))
    return bool(result)
