"""MagCache decisions (wan/stepcache.py) as the authors' script makes them: the A14B high-noise
steps and the retention share always computed, at most K skips in a row per branch, the table
resampled for other step counts, decisions from the table only; and the distilled schedule."""
import numpy as np
import pytest
import torch

from wan.config import TINY, WAN22_I2V_A14B
from wan.scheduler import DistilledEuler, make_scheduler
from wan.stepcache import A14B_I2V_MAG_RATIOS, MagCache, MagCacheParams, high_noise_steps, nearest_interp


def _decide(steps, params=MagCacheParams(), branches=(0, 1), shift=5.0, tokens=None):
    cache = MagCache(A14B_I2V_MAG_RATIOS, steps, high_noise_steps(steps, shift, 0.9), params)
    for i in range(steps):
        cache.begin(i, branches)
        x = torch.randn(len(branches), 3, 2) if tokens is None else tokens
        cache.run_blocks(x, lambda rows: x[rows] + 1.0)
    return cache


def test_table_is_the_authors_and_the_high_noise_steps_always_compute():
    assert len(A14B_I2V_MAG_RATIOS) == 78   # 40 steps x cond/uncond, less the 2 padded ones
    assert high_noise_steps(40, 5.0, 0.9) == 15
    cache = _decide(40)
    first = cache.first_cacheable
    assert first == int(30 + (80 - 30) * 0.1) == 35
    assert all(2 * s + b >= first for s, b in cache.skipped)
    assert len(cache.computed) == 59 and len(cache.skipped) == 21


def test_at_most_k_skips_in_a_row_and_threshold_zero_skips_nothing():
    for k in (1, 2, 3):
        cache = _decide(40, MagCacheParams(threshold=1.0, max_skips=k, retention=0.1))
        for b in (0, 1):
            steps = [s for s, br in cache.skipped if br == b]
            run = longest = 0
            for s in range(40):
                run = run + 1 if s in steps else 0
                longest = max(longest, run)
            assert longest == k
    assert _decide(40, MagCacheParams(threshold=0.0)).skipped == []


def test_decisions_depend_on_the_table_only():
    a = _decide(40, tokens=torch.zeros(2, 3, 2)).skipped
    b = _decide(40, tokens=torch.full((2, 3, 2), 7.0)).skipped
    assert a == b == _decide(40).skipped


def test_skipped_rows_reuse_the_cached_residual():
    cache = MagCache([1.0] * 78, 40, 0, MagCacheParams(threshold=0.5, max_skips=2, retention=0.0))
    cache.begin(0, (0,))
    x0 = torch.zeros(1, 2, 2)
    out0 = cache.run_blocks(x0, lambda rows: x0[rows] + 3.0)     # computed: residual 3
    cache.begin(1, (0,))
    x1 = torch.ones(1, 2, 2)
    out1 = cache.run_blocks(x1, lambda rows: pytest.fail("should be skipped"))
    assert torch.equal(out0, torch.full((1, 2, 2), 3.0)) and torch.equal(out1, torch.full((1, 2, 2), 4.0))
    assert cache.skipped == [(1, 0)]


def test_other_step_counts_resample_the_table():
    table = np.array([1.0] * 2 + A14B_I2V_MAG_RATIOS)
    cache = MagCache(A14B_I2V_MAG_RATIOS, 30, high_noise_steps(30, 5.0, 0.9), MagCacheParams())
    assert len(cache.ratios) == 60
    assert list(cache.ratios[0::2]) == list(nearest_interp(table[0::2], 30))
    assert nearest_interp(np.array([1.0, 2.0, 3.0]), 1).tolist() == [3.0]


def test_params_parse_and_reject():
    assert MagCacheParams.parse("0.04, 3, 0.2") == MagCacheParams(0.04, 3, 0.2)
    for bad in ("0.04,3", "x,1,0.1", "0.1,1,2"):
        with pytest.raises(ValueError, match="WAN_MAGCACHE"):
            MagCacheParams.parse(bad)


def test_distilled_schedule_is_the_distillation_authors():
    s = make_scheduler("distilled-euler", 4, 5.0)
    assert isinstance(s, DistilledEuler)
    assert s.timesteps == [1000.0, 937.5, np.float32(2500 / 3).item(), 625.0]   # float, not truncated
    # LightX2V's configs: denoising_step_list [1000, 750, 500, 250] picks σ = 1 - k/1000 shifted
    lightx2v = [5 * (k / 1000) / (1 + 4 * (k / 1000)) * 1000 for k in (1000, 750, 500, 250)]
    assert s.timesteps == pytest.approx(lightx2v, rel=1e-6)
    # two steps each: the high-noise expert at t >= 900
    assert [t >= WAN22_I2V_A14B.boundary * 1000 for t in s.timesteps] == [True, True, False, False]
    x, v = torch.ones(3), torch.full((3,), 2.0)
    for i in range(4):
        x = s.step(v, x)
    assert torch.allclose(x, torch.full((3,), 1.0 - 2.0), atol=1e-6)   # Euler from σ=1 to 0: x - v
    with pytest.raises(ValueError, match="unknown solver"):
        make_scheduler("dpm", 4, 5.0)
