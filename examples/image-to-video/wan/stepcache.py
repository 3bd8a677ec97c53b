"""Step caching with MagCache (Ma et al. 2025; the authors' code: github.com/Zehong-Ma/MagCache).

Between neighbouring steps the residual the transformer blocks add (output tokens − input tokens)
changes mostly in magnitude, and the ratio of those magnitudes from step to step depends on the
model far more than on the prompt, so the authors calibrated it once per model (the tables below).
A forward is skipped, reusing the last computed residual on the current input tokens, while the
accumulated ratio error stays under a threshold and at most K forwards in a row were skipped;
the first steps (all of the A14B high-noise expert's and a `retention` share of the rest) always
compute. The decisions depend on the table, the thresholds and the step count only, never on the
data. Conditional and unconditional forwards are tracked apart, as the authors count them: forward
number 2·step + branch (0 = conditional, 1 = unconditional), both experts sharing one count."""
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch

# Wan 2.2 I2V-A14B, 40 steps, cond/uncond interleaved: the authors' MagCache4Wan2.2 table (the
# first two ratios are the 1.0 padding their code prepends).
A14B_I2V_MAG_RATIOS = [
    0.99191, 0.99144, 0.99356, 0.99337, 0.99326, 0.99285, 0.99251, 0.99264, 0.99393, 0.99366,
    0.9943, 0.9943, 0.99276, 0.99288, 0.99389, 0.99393, 0.99274, 0.99289, 0.99316, 0.9931,
    0.99379, 0.99377, 0.99268, 0.99271, 0.99222, 0.99227, 0.99175, 0.9916, 0.91076, 0.91046,
    0.98931, 0.98933, 0.99087, 0.99088, 0.98852, 0.98855, 0.98895, 0.98896, 0.98806, 0.98808,
    0.9871, 0.98711, 0.98613, 0.98618, 0.98434, 0.98435, 0.983, 0.98307, 0.98185, 0.98187,
    0.98131, 0.98131, 0.9783, 0.97835, 0.97619, 0.9762, 0.97264, 0.9727, 0.97088, 0.97098,
    0.96568, 0.9658, 0.96045, 0.96055, 0.95322, 0.95335, 0.94579, 0.94594, 0.93297, 0.93311,
    0.91699, 0.9172, 0.89174, 0.89202, 0.8541, 0.85446, 0.79823, 0.79902,
]

# Calibration tables by model; the tiny A14B test config runs A14B's.
TABLES = {"wan2.2-i2v-a14b": A14B_I2V_MAG_RATIOS, "tiny": A14B_I2V_MAG_RATIOS}


@dataclass(frozen=True)
class MagCacheParams:
    """The authors' published I2V-A14B setting (their README's command): threshold 0.06, K = 2,
    retention 0.1."""
    threshold: float = 0.06
    max_skips: int = 2
    retention: float = 0.1

    @classmethod
    def parse(cls, text: str) -> "MagCacheParams":
        """"threshold,K,retention", e.g. "0.06,2,0.1" (WAN_MAGCACHE)."""
        parts = [p.strip() for p in text.split(",")]
        try:
            thr, k, ret = float(parts[0]), int(parts[1]), float(parts[2])
            if len(parts) != 3:
                raise ValueError
        except (ValueError, IndexError):
            raise ValueError(f"WAN_MAGCACHE must be 'threshold,K,retention' (e.g. 0.06,2,0.1), got {text!r}") from None
        if not (thr >= 0 and k >= 0 and 0 <= ret <= 1):
            raise ValueError(f"WAN_MAGCACHE: need threshold >= 0, K >= 0, 0 <= retention <= 1; got {text!r}")
        return cls(thr, k, ret)


def nearest_interp(values: np.ndarray, length: int) -> np.ndarray:
    """The authors' resampling of a table calibrated for another step count."""
    if length == 1:
        return np.array([values[-1]])
    scale = (len(values) - 1) / (length - 1)
    return values[np.round(np.arange(length) * scale).astype(int)]


def high_noise_steps(steps: int, shift: float, boundary: float) -> int:
    """How many steps the high-noise expert takes, counted the way the authors' MagCache script
    counts them (its own schedule: σ from 1 to 0.01, shifted, float32, truncated to integers)."""
    sigmas = np.linspace(1.0, 0.01, steps + 1)[:-1]
    sigmas = shift * sigmas / (1 + (shift - 1) * sigmas)
    t = (sigmas.astype(np.float32) * 1000).astype(np.int64)
    return int((t >= boundary * 1000).sum())


class MagCache:
    """One job's step cache. The pipeline says which step and branches the next forward is for
    (`begin`), and the transformer hands its blocks to `run_blocks`."""

    def __init__(self, ratios: Sequence[float], steps: int, split_steps: int, params: MagCacheParams):
        table = np.array([1.0] * 2 + list(ratios))
        if len(table) != 2 * steps:
            table = np.stack([nearest_interp(table[0::2], steps),
                              nearest_interp(table[1::2], steps)], axis=1).reshape(-1)
        self.ratios = table
        self.params = params
        n, split = 2 * steps, 2 * split_steps
        # I2V with two experts: the high-noise steps and a retention share of the rest compute.
        self.first_cacheable = int(split + (n - split) * params.retention)
        self.acc_ratio = [1.0, 1.0]
        self.acc_err = [0.0, 0.0]
        self.acc_steps = [0, 0]
        self.residual: List[Optional[torch.Tensor]] = [None, None]
        self.step = 0
        self.branches: Tuple[int, ...] = (0, 1)
        self.computed: List[Tuple[int, int]] = []   # (step, branch) whose blocks ran
        self.skipped: List[Tuple[int, int]] = []

    def begin(self, step: int, branches: Tuple[int, ...]) -> None:
        self.step, self.branches = step, branches

    def _skip(self, branch: int) -> bool:
        count = 2 * self.step + branch
        if count < self.first_cacheable or self.residual[branch] is None:   # nothing to reuse yet
            return False
        self.acc_ratio[branch] *= self.ratios[count]
        self.acc_steps[branch] += 1
        self.acc_err[branch] += np.abs(1 - self.acc_ratio[branch])
        if self.acc_err[branch] < self.params.threshold and self.acc_steps[branch] <= self.params.max_skips:
            return True
        self.acc_err[branch], self.acc_steps[branch], self.acc_ratio[branch] = 0.0, 0, 1.0
        return False

    def run_blocks(self, tokens: torch.Tensor, blocks: Callable[[List[int]], torch.Tensor]) -> torch.Tensor:
        """tokens (B, L, dim), one row per branch in `begin`'s order; `blocks(rows)` runs the
        transformer blocks on those rows. Skipped rows get tokens + their branch's cached residual."""
        skip = [self._skip(b) for b in self.branches]
        rows = [i for i, s in enumerate(skip) if not s]
        out: List[Optional[torch.Tensor]] = [None] * len(skip)
        if rows:
            ran = blocks(rows)
            for j, i in enumerate(rows):
                out[i] = ran[j]
                self.residual[self.branches[i]] = ran[j] - tokens[i]
        for i, b in enumerate(self.branches):
            (self.skipped if skip[i] else self.computed).append((self.step, b))
            if skip[i]:
                out[i] = tokens[i] + self.residual[b]
        return torch.stack(out)
