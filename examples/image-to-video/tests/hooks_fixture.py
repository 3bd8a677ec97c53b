"""Callables the tests point WAN_PROMPT_OPTIMIZER / WAN_SAFETY_CHECKER at."""
CALLS = []


def optimize(prompt, image):
    CALLS.append(("optimize", prompt, image.shape))
    return prompt + ", cinematic"


def never_flag(frames):
    CALLS.append(("check", frames.shape))
    return {"flagged": False}


def always_flag(frames):
    return True
