"""A queue-based GPU worker: POST /runsync {"input": {"prompt": "..."}} runs `generate`."""
from svc import Endpoint, GpuGroup


@Endpoint(name="gpu-worker", gpu=GpuGroup.ADA_24, workers=(0, 3), idle_timeout=5)
async def generate(prompt: str, steps: int = 20) -> dict:
    # Import heavy packages inside the function body, not at the top of the file:
    # svc reads this file without running it, and torch is pre-installed in the GPU image.
    try:
        import torch

        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except ImportError:
        device = "no torch here"
    return {"prompt": prompt, "steps": steps, "device": device}
