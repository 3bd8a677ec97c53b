"""Image-to-video sampling as the authors' loop runs it: text/image conditioning, guided
flow-matching denoising with the two-expert switch, VAE decoding. Works on any `Components`
(tiny or real). The steps that must match the reference are listed in README.md."""
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from .image import cover_and_crop, image_tensor, resize_bicubic, video_to_uint8
from .inputs import compute_size, cover_size
from .loader import Components
from .scheduler import make_scheduler

@dataclass
class SampleResult:
    frames: np.ndarray                 # uint8 (F, H, W, 3)
    timings: Dict[str, float] = field(default_factory=dict)
    experts_used: List[int] = field(default_factory=list)
    timesteps: List[float] = field(default_factory=list)   # what the model was given, per step
    forwards: int = 0                  # transformer forwards whose blocks ran (cond and uncond count apart)
    skipped: List[Tuple[int, int]] = field(default_factory=list)   # (step, branch) served by the step cache
    latent: Optional[torch.Tensor] = None   # the final latent, before decoding

    @property
    def steps_computed(self) -> int:
        """Steps in which some forward ran (a step is saved only when all its branches were cached)."""
        per_step = (self.forwards + len(self.skipped)) // max(len(self.timesteps), 1)
        counts: Dict[int, int] = {}
        for step, _ in self.skipped:
            counts[step] = counts.get(step, 0) + 1
        return len(self.timesteps) - sum(1 for n in counts.values() if n == per_step)


def build_mask(frames: int, lat_h: int, lat_w: int) -> torch.Tensor:
    """(4, T, lat_h, lat_w) conditioning mask: 1 where pixels are given (frame 0), else 0.
    Frame 0 is repeated 4x so F+3 frames fold into 4 channels per latent frame."""
    m = torch.ones(1, frames, lat_h, lat_w)
    m[:, 1:] = 0
    m = torch.cat([m[:, :1].repeat(1, 4, 1, 1), m[:, 1:]], dim=1)
    return m.view(1, (frames + 3) // 4, 4, lat_h, lat_w).transpose(1, 2)[0]


class Timer:
    def __init__(self, device):
        self.device = device
        self.t: Dict[str, float] = {}

    @contextmanager
    def __call__(self, name):
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        yield
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.t[name] = round(self.t.get(name, 0.0) + time.perf_counter() - t0, 4)


def _place(c: Components, module: torch.nn.Module, active: bool):
    """With offload, a module lives on the GPU only while it is used (wan/residency.py)."""
    if c.offload:
        copies = c.host_copies[id(module)]
        if active:
            copies.to_device(c.device)
        else:
            copies.to_host()
            if c.device.type == "cuda":
                torch.cuda.empty_cache()


@torch.no_grad()
def generate(c: Components, image_rgb: np.ndarray, prompt: str, negative_prompt: str,
             frames: int, steps: int, guidance: float, shift: float, seed: int,
             solver: str = "unipc", area: Optional[int] = None, step_cache=None) -> SampleResult:
    """image_rgb: the decoded input image, uint8 (H0, W0, 3) at its own size; frames = 4n+1;
    area: the requested W·H (default: the image's), the aspect follows the image; solver: a name
    of wan/scheduler.SOLVERS ("distilled-euler" for LoRA-distilled experts); step_cache: a
    wan/stepcache.MagCache for this job, or None."""
    cfg = c.cfg
    dev = c.device
    image = image_tensor(image_rgb)
    st, sh, sw = cfg.vae.stride
    ih, iw = image_rgb.shape[:2]
    size_rule = cover_size if cfg.first_frame_latent else compute_size
    h, w = size_rule(area or ih * iw, ih, iw, sh, cfg.transformer.patch_size[1])
    lat_t, lat_h, lat_w = (frames - 1) // st + 1, h // sh, w // sw
    timer = Timer(dev)
    # g = 1 is the conditional prediction alone (the distillation authors' rule: |g - 1| > 1e-6 guides)
    use_uncond = abs(guidance - 1.0) > 1e-6
    use_cond = guidance != 0.0     # g = 0 is the unconditional prediction alone

    with timer("text_encode"):
        _place(c, c.t5, True)
        prompts = ([prompt] if use_cond else []) + ([negative_prompt or cfg.negative_prompt] if use_uncond else [])
        states = c.t5.encode([c.tokenizer(p) for p in prompts])
        context = c.experts[0].pad_text(states)
        _place(c, c.t5, False)

    # The authors draw the noise first, on the device the model runs on, from the seed.
    gen = torch.Generator(device=dev).manual_seed(seed)
    x = torch.randn(cfg.vae.z_dim, lat_t, lat_h, lat_w, generator=gen, device=dev)

    clip_tokens = y = keep = z0 = None
    with timer("image_encode"):
        if cfg.first_frame_latent:
            # TI2V-5B: the image is latent frame 0, re-imposed after every step; `keep` is 1
            # where the sampler works (its tokens get the step's timestep, frame 0's get 0).
            first = image_tensor(cover_and_crop(image_rgb, w, h))
            z0 = c.vae.encode(first[None, :, None].to(dev))[0]
            keep = torch.ones_like(x)
            keep[:, 0] = 0
            x = (1 - keep) * z0 + keep * x
        else:
            if c.clip is not None:  # CLIP gets the image at its own size (it resizes to 224)
                clip_tokens = c.clip(image[None].to(dev)).expand(len(prompts), -1, -1)
            first = resize_bicubic(image, h, w)
            video = torch.cat([first[:, None], first.new_zeros(3, frames - 1, h, w)], dim=1)
            latent = c.vae.encode(video[None].to(dev))[0]
            y = torch.cat([build_mask(frames, lat_h, lat_w).to(dev), latent], dim=0)

    token_keep = None
    if keep is not None:  # per-token timesteps, one per latent patch: 0 on the image's frame
        _, ph, pw = cfg.transformer.patch_size
        token_keep = keep[0, :, ::ph, ::pw].flatten()[None]

    sched = make_scheduler(solver, steps, shift)
    branches = tuple(b for b, on in ((0, use_cond), (1, use_uncond)) if on)
    used = []
    forwards = 0
    active = None
    with timer("denoise"):
        for i, t in enumerate(sched.timesteps):
            idx = 0 if (not cfg.two_experts or t >= cfg.boundary * 1000) else 1
            if idx != active:
                if active is not None:
                    _place(c, c.experts[active], False)
                _place(c, c.experts[idx], True)
                active = idx
            used.append(idx)
            model = c.experts[idx]
            inp = (x if y is None else torch.cat([x, y], dim=0))[None]
            inp = inp.expand(len(prompts), -1, -1, -1, -1)
            tt = torch.full((len(prompts),), t, device=dev)
            if token_keep is not None:
                tt = (token_keep * t).expand(len(prompts), -1)
            # cond and uncond in one batched forward
            if step_cache is not None:
                step_cache.begin(i, branches)
            v = model(inp, tt, context, clip_tokens, step_cache).float()
            forwards += len(prompts)
            if use_cond and use_uncond:
                v = v[1] + guidance * (v[0] - v[1])
            else:
                v = v[0]
            x = sched.step(v, x.float())
            if keep is not None:
                x = (1 - keep) * z0 + keep * x
        if active is not None:
            _place(c, c.experts[active], False)

    skipped = list(step_cache.skipped) if step_cache is not None else []
    with timer("decode"):
        video = c.vae.decode(x[None].float())[0]
        out = video_to_uint8(video)
    return SampleResult(frames=out, timings=timer.t, experts_used=used, timesteps=list(sched.timesteps),
                        forwards=forwards - len(skipped), skipped=skipped, latent=x)
