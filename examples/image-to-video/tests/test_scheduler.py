import math

import pytest
import torch

from wan.scheduler import SIGMA_MAX, FlowEuler, FlowUniPC, Schedule, make_scheduler, shifted_sigmas

# The authors' integer timesteps (issue 8): σ' · 1000 truncated.
GOLDEN_40_AT_5 = [999, 994, 989, 983, 978, 972, 965, 959, 952, 944, 937, 929, 920, 911, 902, 892,
                  882, 870, 859, 846, 833, 818, 803, 786, 768, 749, 728, 706, 681, 654, 624, 591,
                  555, 514, 468, 416, 356, 288, 208, 113]


def test_sigma_shift_values():
    assert SIGMA_MAX == pytest.approx(0.999, abs=1e-7) and SIGMA_MAX != 0.999  # the float32 value
    assert shifted_sigmas(4, 1.0, 1.0) == pytest.approx([1.0, 0.75, 0.5, 0.25])
    # σ' = 5σ / (1 + 4σ)
    assert shifted_sigmas(4, 5.0, 1.0) == pytest.approx([1.0, 15 / 16, 2.5 / 3, 1.25 / 2])
    s = shifted_sigmas(30, 5.0)
    assert len(s) == 30 and all(a > b for a, b in zip(s, s[1:]))


def test_integer_timesteps_match_the_authors():
    assert Schedule(40, 5.0).timesteps == GOLDEN_40_AT_5
    assert Schedule(30, 5.0).timesteps[-6:] == [555, 499, 434, 356, 262, 146]
    assert Schedule(4, 3.0).timesteps == [999, 899, 749, 499]
    for name in ("euler", "unipc"):
        ts = make_scheduler(name, 40, 5.0).timesteps
        assert ts == GOLDEN_40_AT_5 and all(type(t) is int for t in ts)


def test_sigmas_are_float32_and_end_at_zero():
    import numpy as np
    for sched in (FlowEuler(4, 5.0), FlowUniPC(4, 5.0)):
        assert len(sched.sigmas) == 5 and sched.sigmas[-1] == 0.0
        assert all(float(np.float32(s)) == s for s in sched.sigmas)
        s0 = 5 * SIGMA_MAX / (1 + 4 * SIGMA_MAX)
        assert sched.sigmas[0] == pytest.approx(s0, rel=1e-7)
        assert sched.timesteps[0] == int(1000 * s0) == 999


def _run(sched, x, velocity):
    for i in range(len(sched.timesteps)):
        x = sched.step(velocity(x, sched.sigmas[i]), x)
    return x


@pytest.mark.parametrize("name", ["euler", "unipc"])
def test_exact_velocity_recovers_target(name):
    # v = (x - x0)/σ is the exact velocity for a fixed target: every solver must land on x0.
    x0 = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
    sched = make_scheduler(name, 7, 3.0)
    noise = torch.tensor([1.0, 0.5, -0.7], dtype=torch.float64)
    x = (1 - sched.sigmas[0]) * x0 + sched.sigmas[0] * noise
    out = _run(sched, x, lambda x, s: (x - x0) / s)
    assert torch.allclose(out, x0, atol=1e-9)


def _gaussian_velocity(s2):
    # data ~ N(0, s2): E[x0 | x_σ] = (1-σ)s2 / ((1-σ)^2 s2 + σ^2) · x, v = (x - E[x0|x]) / σ
    def v(x, sig):
        x0 = (1 - sig) * s2 / ((1 - sig) ** 2 * s2 + sig ** 2) * x
        return (x - x0) / sig
    return v


def test_unipc_second_order_beats_euler():
    s2 = 0.25
    errs = {}
    for name in ("euler", "unipc"):
        sched = make_scheduler(name, 40, 5.0)
        sig = sched.sigmas[0]
        x = torch.tensor([1.0], dtype=torch.float64)
        # exact ODE flow scales x by the ratio of marginal stds
        exact = x * math.sqrt(s2) / math.sqrt((1 - sig) ** 2 * s2 + sig ** 2)
        errs[name] = abs(float(_run(sched, x.clone(), _gaussian_velocity(s2)) - exact))
    # measured: euler 0.053, unipc 0.0057 (the final step is first order in both)
    assert errs["unipc"] < errs["euler"] / 5, errs


def test_unknown_solver():
    with pytest.raises(ValueError):
        make_scheduler("ddim", 4, 5.0)
