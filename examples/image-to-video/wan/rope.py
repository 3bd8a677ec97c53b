"""3D rotary position embedding over (frame, height, width) token grids."""
import torch


def rope_split(head_dim: int):
    """Real dims per axis: t gets d - 4*(d//6), h and w get 2*(d//6) each (128 → 44/42/42)."""
    hw = 2 * (head_dim // 6)
    return head_dim - 2 * hw, hw, hw


def _axis_angles(n: int, dim: int, theta: float = 10000.0) -> torch.Tensor:
    """Angles (n, dim/2) for positions 0..n-1; each axis has its own frequency ladder."""
    inv = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return torch.outer(torch.arange(n, dtype=torch.float64), inv)


def rope_angles(f: int, h: int, w: int, head_dim: int) -> torch.Tensor:
    """Angles (f*h*w, head_dim/2) for a token grid flattened in (f, h, w) order."""
    dt, dh, dw = rope_split(head_dim)
    at = _axis_angles(f, dt)[:, None, None, :].expand(f, h, w, dt // 2)
    ah = _axis_angles(h, dh)[None, :, None, :].expand(f, h, w, dh // 2)
    aw = _axis_angles(w, dw)[None, None, :, :].expand(f, h, w, dw // 2)
    return torch.cat([at, ah, aw], dim=-1).reshape(f * h * w, head_dim // 2)


def rope_tables(f, h, w, head_dim, device=None):
    """cos/sin (L, 1, head_dim/2) in fp32, computed in fp64 for accuracy at long sequences."""
    a = rope_angles(f, h, w, head_dim)
    return (a.cos().float().unsqueeze(1).to(device), a.sin().float().unsqueeze(1).to(device))


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (B, L, H, D) rotated on interleaved pairs (x[2i], x[2i+1]); real math, so bf16-safe."""
    dtype = x.dtype
    xf = x.float().unflatten(-1, (-1, 2))
    x0, x1 = xf[..., 0], xf[..., 1]
    out = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)
    return out.flatten(-2).to(dtype)
