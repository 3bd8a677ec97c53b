"""The first frame as the authors prepare it, and the decoded video back to uint8.

- to a tensor: uint8 / 255, then (x - 0.5) / 0.5, float32 (3, H, W) in [-1, 1];
- 2.1 / 2.2 A14B: bicubic interpolation of that float tensor to the output size (no crop, no
  antialiasing), on the CPU as the authors do;
- output: clamp to [-1, 1], (x + 1) / 2 · 255, truncated to uint8.
"""
import numpy as np
import torch
import torch.nn.functional as F


def image_tensor(rgb: np.ndarray) -> torch.Tensor:
    """uint8 (H, W, 3) → float32 (3, H, W) in [-1, 1]."""
    x = torch.from_numpy(np.array(rgb, dtype=np.uint8)).permute(2, 0, 1).float() / 255
    return x.sub_(0.5).div_(0.5)


def resize_bicubic(image: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """float (3, H, W) → float (3, h, w), bicubic on the CPU (values may overshoot [-1, 1])."""
    return F.interpolate(image[None].cpu(), size=(h, w), mode="bicubic", align_corners=False)[0]


def video_to_uint8(video: torch.Tensor) -> np.ndarray:
    """(3, F, H, W) in [-1, 1] → uint8 (F, H, W, 3), truncating after scaling."""
    v = (video.float().clamp(-1, 1) + 1) / 2
    return (v * 255).to(torch.uint8).permute(1, 2, 3, 0).cpu().numpy()
