import torch

from wan.pipeline import build_mask
from wan.rope import apply_rope, rope_angles, rope_split, rope_tables


def test_rope_split():
    assert rope_split(128) == (44, 42, 42)
    assert rope_split(12) == (4, 4, 4)
    assert sum(rope_split(64)) == 64


def test_rope_angles_follow_the_grid():
    f, h, w, d = 3, 4, 5, 12
    a = rope_angles(f, h, w, d)
    assert a.shape == (f * h * w, d // 2)
    dt, dh, _ = rope_split(d)
    tok = lambda fi, hi, wi: (fi * h + hi) * w + wi
    # t part depends only on the frame, h part on the row, w part on the column
    assert torch.equal(a[tok(2, 0, 0), : dt // 2], a[tok(2, 3, 4), : dt // 2])
    assert not torch.equal(a[tok(1, 0, 0), : dt // 2], a[tok(2, 0, 0), : dt // 2])
    assert torch.equal(a[tok(0, 2, 0), dt // 2:(dt + dh) // 2], a[tok(2, 2, 4), dt // 2:(dt + dh) // 2])
    assert torch.all(a[tok(0, 0, 0)] == 0)  # positions start at 0
    # first frequency of the t axis is 1 rad per frame, theta 10000
    assert a[tok(1, 0, 0), 0] == 1.0
    assert torch.isclose(a[tok(1, 0, 0), 1], torch.tensor(10000 ** (-2 / dt), dtype=torch.float64))


def test_rope_is_relative():
    torch.manual_seed(0)
    d = 12
    cos, sin = rope_tables(6, 1, 1, d)
    q, k = torch.randn(1, 1, 1, d), torch.randn(1, 1, 1, d)
    def dot(i, j):
        qi = apply_rope(q.expand(1, 1, 1, d), cos[i:i + 1], sin[i:i + 1])
        kj = apply_rope(k.expand(1, 1, 1, d), cos[j:j + 1], sin[j:j + 1])
        return float((qi * kj).sum())
    assert abs(dot(3, 1) - dot(5, 3)) < 1e-5
    assert abs(dot(3, 1) - dot(3, 2)) > 1e-4
    x = torch.randn(1, 6, 2, d)
    assert torch.allclose(apply_rope(x, cos, sin).norm(dim=-1), x.norm(dim=-1), atol=1e-5)


def test_mask_construction():
    m = build_mask(9, 2, 3)
    assert m.shape == (4, 3, 2, 3)
    assert torch.all(m[:, 0] == 1) and torch.all(m[:, 1:] == 0)
    m81 = build_mask(81, 90, 160)
    assert m81.shape == (4, 21, 90, 160)
    assert float(m81.sum()) == 4 * 90 * 160
