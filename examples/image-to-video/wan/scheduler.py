"""Flow-matching samplers with timestep shift: Euler and UniPC (order 2, data prediction).

The model predicts velocity v = noise - x0 on the path x_σ = (1-σ)·x0 + σ·noise. Both samplers
share the authors' schedule (README.md, "Fidelity to the reference"): σ from 0.999 down,
shifted, stored as float32, and the model is given σ·1000 truncated to an integer.
"""
import math
from typing import List

import numpy as np
import torch

# The authors' scheduler starts at σ = 1 - 1/1000 (a float32 value): λ = log(α/σ) must be finite.
SIGMA_MAX = float(np.float32(0.999))
NUM_TRAIN_TIMESTEPS = 1000


def shifted_sigmas(steps: int, shift: float, sigma_max: float = SIGMA_MAX) -> List[float]:
    """linspace(sigma_max, 0, steps+1)[:-1] shifted by σ' = shift·σ / (1 + (shift-1)·σ), float64."""
    if steps < 1:
        raise ValueError("steps must be >= 1")
    base = np.linspace(sigma_max, 0.0, steps + 1)[:-1]
    return (shift * base / (1 + (shift - 1) * base)).tolist()


class Schedule:
    """sigmas (steps + 1, ending at 0, float32 values) and the integer timesteps the model sees."""

    def __init__(self, steps: int, shift: float):
        shifted = shifted_sigmas(steps, shift)
        self.timesteps: List[int] = [int(s * NUM_TRAIN_TIMESTEPS) for s in shifted]  # truncation
        self.sigmas: List[float] = [float(np.float32(s)) for s in shifted] + [0.0]
        self.steps = steps


class FlowEuler(Schedule):
    order = 1

    def __init__(self, steps: int, shift: float):
        super().__init__(steps, shift)
        self.i = 0

    def step(self, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        s, s_next = self.sigmas[self.i], self.sigmas[self.i + 1]
        self.i += 1
        return (x.float() + (s_next - s) * v.float()).to(x.dtype)


class FlowUniPC(Schedule):
    """UniPC multistep (B(h) = e^h - 1 variant) predicting x0 = x - σ·v, with the UniC corrector
    and order lowered to 1 for the first step (warm-up) and the last step."""

    def __init__(self, steps: int, shift: float, order: int = 2):
        super().__init__(steps, shift)
        self.order = order
        self.i = 0
        self.x0s: List[torch.Tensor] = []   # data predictions, newest last
        self.last_x = None
        self.last_order = 1

    @staticmethod
    def _lam(s: float) -> float:
        # λ = log(α/σ) with α = 1-σ; σ = 0 (the end) gives +inf.
        if s <= 0.0:
            return math.inf
        return math.log(1.0 - s) - math.log(s)

    def _coeffs(self, h: float, rks: List[float], order: int):
        """R matrix and b vector of UniPC for data prediction (hh = -h)."""
        hh = -h
        h_phi_1 = math.expm1(hh)
        h_phi_k = h_phi_1 / hh - 1.0 if math.isfinite(hh) else -1.0
        B_h = math.expm1(hh)
        fact = 1
        R, b = [], []
        for k in range(1, order + 1):
            R.append([r ** (k - 1) for r in rks])
            b.append(h_phi_k * fact / B_h)
            fact *= k + 1
            h_phi_k = (h_phi_k / hh - 1.0 / fact) if math.isfinite(hh) else -1.0 / fact
        return h_phi_1, B_h, R, b

    def _predict(self, x, order):
        """UniP: from x at sigmas[i] to sigmas[i+1] using the last `order` x0 predictions."""
        s0, st = self.sigmas[self.i], self.sigmas[self.i + 1]
        l0, lt = self._lam(s0), self._lam(st)
        h = lt - l0
        m0 = self.x0s[-1]
        rks, D1s = [], []
        for k in range(1, order):
            sk = self.sigmas[self.i - k]
            rk = (self._lam(sk) - l0) / h
            rks.append(rk)
            D1s.append((self.x0s[-(k + 1)] - m0) / rk)
        rks.append(1.0)
        h_phi_1, B_h, R, b = self._coeffs(h, rks, order)
        out = (st / s0) * x - (1.0 - st) * h_phi_1 * m0
        if D1s:
            if order == 2:
                rhos = [0.5]
            else:
                rhos = torch.linalg.solve(torch.tensor(R)[:-1, :-1], torch.tensor(b)[:-1]).tolist()
            out = out - (1.0 - st) * B_h * sum(r * d for r, d in zip(rhos, D1s))
        return out

    def _correct(self, x_pred, x0_new, order):
        """UniC: refine the previous step's result once the model output at it is known."""
        st, s0 = self.sigmas[self.i], self.sigmas[self.i - 1]
        l0, lt = self._lam(s0), self._lam(st)
        h = lt - l0
        m0 = self.x0s[-1]
        rks, D1s = [], []
        for k in range(1, order):
            sk = self.sigmas[self.i - (k + 1)]
            rk = (self._lam(sk) - l0) / h
            rks.append(rk)
            D1s.append((self.x0s[-(k + 1)] - m0) / rk)
        rks.append(1.0)
        h_phi_1, B_h, R, b = self._coeffs(h, rks, order)
        if order == 1:
            rhos = [0.5]
        else:
            rhos = torch.linalg.solve(torch.tensor(R, dtype=torch.float64),
                                      torch.tensor(b, dtype=torch.float64)).tolist()
        out = (st / s0) * self.last_x - (1.0 - st) * h_phi_1 * m0
        corr = sum(r * d for r, d in zip(rhos[:-1], D1s)) if D1s else 0.0
        return out - (1.0 - st) * B_h * (corr + rhos[-1] * (x0_new - m0))

    def step(self, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x0 = x - self.sigmas[self.i] * v.float()
        if self.i > 0 and self.last_x is not None:
            x = self._correct(x, x0, self.last_order)
        self.x0s = (self.x0s + [x0])[-self.order:]
        order = min(self.order, self.steps - self.i, len(self.x0s))
        self.last_order = order
        self.last_x = x
        x_next = self._predict(x, order)
        self.i += 1
        return x_next.to(dtype)


class DistilledEuler:
    """The step-distilled experts' sampler, as the distillation authors' pipeline runs it
    (Wan2.2-Lightning's Euler; LightX2V's `denoising_step_list` [1000, 750, 500, 250] at shift 5 is
    the same schedule for 4 steps): σ = linspace(1000, 0, steps+1)/1000 shifted, all in float32; the
    model gets σ·1000 as a float (1000, 937.5, 833.33, 625: no truncation, no 0.999 start), and
    x ← x + (σ_next − σ)·v with the difference taken in float32."""
    order = 1

    def __init__(self, steps: int, shift: float):
        if steps < 1:
            raise ValueError("steps must be >= 1")
        base = torch.from_numpy(np.linspace(NUM_TRAIN_TIMESTEPS, 0, steps + 1, dtype=np.float32))
        base = base / NUM_TRAIN_TIMESTEPS
        self._sigmas = shift * base / (1 + (shift - 1) * base)       # float32, ends at 0
        self.sigmas: List[float] = self._sigmas.tolist()
        self.timesteps: List[float] = (self._sigmas * NUM_TRAIN_TIMESTEPS)[:-1].tolist()
        self.steps = steps
        self.i = 0

    def step(self, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        delta = (self._sigmas[self.i + 1] - self._sigmas[self.i]).to(x.device)
        self.i += 1
        return x.float() + delta * v.float()


SOLVERS = {"euler": FlowEuler, "unipc": FlowUniPC, "distilled-euler": DistilledEuler}


def make_scheduler(name: str, steps: int, shift: float):
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r} ({' | '.join(SOLVERS)})")
    return SOLVERS[name](steps, shift)
