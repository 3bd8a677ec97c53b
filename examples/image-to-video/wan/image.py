"""The first frame as the authors prepare it, and the decoded video back to uint8.

- to a tensor: uint8 / 255, then (x - 0.5) / 0.5, float32 (3, H, W) in [-1, 1];
- 2.1 / 2.2 A14B: bicubic interpolation of that float tensor to the output size (no crop, no
  antialiasing), on the CPU as the authors do;
- TI2V-5B: a Lanczos resize of the 8-bit image that covers the output size, then a centre crop.
  The authors use Pillow's; `resize_lanczos` computes the same integers (22-bit fixed-point taps,
  horizontal pass then vertical, 8-bit between) without Pillow, which the worker image lacks;
- output: clamp to [-1, 1], (x + 1) / 2 · 255, truncated to uint8.
"""
import math

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


_PRECISION_BITS = 22


def _lanczos3(x: float) -> float:
    def sinc(v):
        if v == 0.0:
            return 1.0
        v *= math.pi
        return math.sin(v) / v
    return sinc(x) * sinc(x / 3) if -3.0 <= x < 3.0 else 0.0


def _taps(in_size: int, out_size: int):
    """Source indices and fixed-point weights (out_size, k) of one resampling axis."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = 3.0 * filterscale
    k = int(math.ceil(support)) * 2 + 1
    index = np.zeros((out_size, k), np.int64)
    weight = np.zeros((out_size, k), np.int64)
    for o in range(out_size):
        center = (o + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        n = min(int(center + support + 0.5), in_size) - lo
        w = [_lanczos3((i + lo - center + 0.5) * (1.0 / filterscale)) for i in range(n)]
        total = 0.0
        for v in w:
            total += v
        w = [v / total if total != 0.0 else v for v in w]
        index[o, :n] = np.arange(lo, lo + n)
        weight[o, :n] = [int(v * (1 << _PRECISION_BITS) + (0.5 if v >= 0 else -0.5)) for v in w]
        index[o, n:] = lo  # zero weight
    return index, weight


def _resample_axis(img: np.ndarray, out_size: int, axis: int) -> np.ndarray:
    index, weight = _taps(img.shape[axis], out_size)
    src = np.moveaxis(img, axis, 0).astype(np.int64)
    acc = np.full((out_size,) + src.shape[1:], 1 << (_PRECISION_BITS - 1), np.int64)
    for j in range(index.shape[1]):
        acc += src[index[:, j]] * weight[:, j].reshape((-1,) + (1,) * (src.ndim - 1))
    out = np.clip(acc >> _PRECISION_BITS, 0, 255).astype(np.uint8)
    return np.moveaxis(out, 0, axis)


def resize_lanczos(rgb: np.ndarray, w: int, h: int) -> np.ndarray:
    """uint8 (H, W, 3) → uint8 (h, w, 3), Lanczos-3 with antialiasing when shrinking."""
    if rgb.shape[1] != w:
        rgb = _resample_axis(rgb, w, 1)
    if rgb.shape[0] != h:
        rgb = _resample_axis(rgb, h, 0)
    return rgb


def cover_and_crop(rgb: np.ndarray, w: int, h: int) -> np.ndarray:
    """Scale uint8 (H, W, 3) so it covers (h, w), keeping its aspect, then crop the centre."""
    ih, iw = rgb.shape[:2]
    scale = max(w / iw, h / ih)
    big = resize_lanczos(rgb, round(iw * scale), round(ih * scale))
    x1, y1 = (big.shape[1] - w) // 2, (big.shape[0] - h) // 2
    return big[y1:y1 + h, x1:x1 + w]
