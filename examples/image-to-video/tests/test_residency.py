import pytest
import torch

from wan.config import TINY
from wan.residency import ACTIVATION_HEADROOM, HostCopies, plan_residency
from wan.transformer import WanTransformer
from wan.weights import random_init


def test_a_swap_out_points_back_at_the_host_copies_without_copying():
    model = random_init(WanTransformer(TINY.transformer), 3)
    before = {k: (v.data_ptr(), v.clone()) for k, v in model.state_dict().items()}
    copies = HostCopies(model)
    copies.to_device(torch.device("meta"))  # a device the host memory cannot be copied back from
    assert all(v.device.type == "meta" for v in model.state_dict().values())
    copies.to_host()
    after = model.state_dict()
    for k, (ptr, value) in before.items():
        assert after[k].data_ptr() == ptr and torch.equal(after[k], value)


def test_residency_follows_the_card():
    a14b_weights = 2 * 28_600_000_000 + 11_400_000_000
    assert plan_residency(a14b_weights, 80 << 30)            # H100 80 GB: offload
    assert not plan_residency(a14b_weights, 141 << 30)       # H200 141 GB: all resident
    assert plan_residency(10, ACTIVATION_HEADROOM)           # nothing left for the job itself



# Packing an offloaded part into one host buffer (wan/residency.pack). Page-locking needs CUDA, the
# packing does not: these run it on plain host memory (bench/video/pin.py measures the pinned bytes).

def _part():
    """Tensors of several dtypes and sizes, odd byte counts among them, one registered twice."""
    m = random_init(WanTransformer(TINY.transformer), 3)
    m.register_buffer("steps", torch.arange(3, dtype=torch.int64))
    m.register_buffer("mask", torch.tensor([True, False, True]))
    m.head.register_buffer("odd", torch.arange(5, dtype=torch.uint8))
    m.head.register_buffer("scalar", torch.tensor(2.5, dtype=torch.bfloat16))
    m.head.register_buffer("empty", torch.zeros(0, 4))
    m.register_buffer("tied", m.head.odd)   # one tensor under two names
    m.head.head.weight.data = m.head.head.weight.data.to(torch.bfloat16)
    return m


def _tensors(m):
    """Every name's tensor, a tensor under two names twice (state_dict would keep one of them)."""
    return {f"{prefix}.{name}".lstrip("."): t for prefix, mod in m.named_modules()
            for table in (mod._parameters, mod._buffers) for name, t in table.items() if t is not None}


def test_a_part_packed_into_one_buffer_keeps_every_tensor():
    from wan.residency import ALIGN, pack, packed_layout
    m = _part()
    before = {k: v.clone() for k, v in _tensors(m).items()}
    kinds = {k: type(v) for k, v in _tensors(m).items()}
    distinct = list({id(t): t for t in _tensors(m).values()}.values())
    offsets, total = packed_layout(distinct)
    assert all(o % ALIGN == 0 for o in offsets)
    assert total == offsets[-1] + distinct[-1].numel() * distinct[-1].element_size()
    aligned = sum(-(-t.numel() * t.element_size() // ALIGN) * ALIGN for t in distinct[:-1])
    assert total == aligned + distinct[-1].numel() * distinct[-1].element_size()

    flat = pack(m, lambda n: torch.full((n,), 0xAB, dtype=torch.uint8))
    assert flat.numel() == total
    after = _tensors(m)
    base, end = flat.data_ptr(), flat.data_ptr() + total
    starts = set()
    for k, v in after.items():
        assert v.dtype == before[k].dtype and v.shape == before[k].shape and torch.equal(v, before[k]), k
        assert type(v) is kinds[k] and v.is_contiguous(), k
        if v.numel():
            assert base <= v.data_ptr() and v.data_ptr() + v.numel() * v.element_size() <= end, k
            assert (v.data_ptr() - base) % ALIGN == 0, k
            starts.add(v.data_ptr())
    assert len(starts) == len([t for t in distinct if t.numel()])   # no two tensors overlap
    assert {v.storage().data_ptr() for v in after.values()} == {base}
    assert after["tied"] is after["head.odd"]
    flat.zero_()   # the tensors are views of the buffer, not copies
    assert all(not v.any() for v in after.values())


def test_a_meta_part_is_packed_without_values_and_loads_straight_into_the_buffer(tmp_path):
    from wan.residency import pack
    from wan.weights import empty_init, load_into, write_safetensors
    src = random_init(WanTransformer(TINY.transformer), 5)
    write_safetensors(str(tmp_path / "m.safetensors"), src.state_dict())
    with empty_init("meta"):
        dst = WanTransformer(TINY.transformer)
    flat = pack(dst, lambda n: torch.zeros(n, dtype=torch.uint8))
    assert all(v.device.type == "cpu" and not v.any() for v in dst.state_dict().values())
    load_into(dst, str(tmp_path / "m.safetensors"))
    got = dst.state_dict()
    assert all(torch.equal(got[k], v) for k, v in src.state_dict().items())
    assert flat.any()   # the reads landed in the buffer itself


def test_host_buffer_is_one_page_aligned_region_the_views_keep_alive():
    import gc
    from wan.residency import host_buffer
    flat = host_buffer(3 * 4096 + 5)
    assert flat.numel() == 3 * 4096 + 5 and flat.data_ptr() % 4096 == 0
    view = flat[100:200].view(torch.int32)
    del flat
    gc.collect()
    view.fill_(7)   # still mapped
    assert view.sum().item() == 7 * 25


def test_the_loader_gives_a_host_part_one_buffer(tmp_path):
    from wan.loader import _build
    from wan.weights import write_safetensors
    src = random_init(WanTransformer(TINY.transformer), 6)
    write_safetensors(str(tmp_path / "m.safetensors"), src.state_dict())
    m = _build(WanTransformer, TINY.transformer, torch.device("cpu"), torch.bfloat16, path=str(tmp_path / "m.safetensors"))
    ts = list(m.state_dict().values())
    assert len({t.storage().data_ptr() for t in ts}) == 1   # one buffer that every tensor views
    got = m.state_dict()
    assert all(got[k].dtype == torch.bfloat16 and torch.equal(got[k], v.to(torch.bfloat16)) for k, v in src.state_dict().items())


class _FakeDriver:
    """cudaHostRegister / cudaHostUnregister as torch.cuda.cudart() gives them; there is no GPU here."""

    def __init__(self, register_error=0):
        self.registered, self.unregistered, self.register_error = [], [], register_error

    def cudaHostRegister(self, address, size, flags):
        self.registered.append((address, size))
        return self.register_error

    def cudaHostUnregister(self, address):
        self.unregistered.append(address)
        return 0


def test_with_cuda_the_buffer_is_registered_exactly_and_unregistered_when_its_last_view_goes(monkeypatch):
    import gc
    from wan.residency import host_buffer, pin
    driver = _FakeDriver()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "cudart", lambda: driver)
    m = random_init(WanTransformer(TINY.transformer), 3)
    nbytes = sum(t.numel() * t.element_size() for t in m.state_dict().values())
    pin(m)
    [(address, size)] = driver.registered
    assert size < nbytes + 64 * len(m.state_dict())   # the tensors' bytes, not a power of two
    assert address == min(t.data_ptr() for t in m.state_dict().values())
    params = list(m.parameters())
    del m
    gc.collect()
    assert driver.unregistered == []      # the parameters still view it
    del params
    gc.collect()
    assert driver.unregistered == [address]

    failing = _FakeDriver(register_error=2)
    monkeypatch.setattr(torch.cuda, "cudart", lambda: failing)
    with pytest.raises(RuntimeError, match="could not page-lock .* WAN_OFFLOAD=0"):
        host_buffer(1 << 20)
    gc.collect()
    assert failing.unregistered == []     # nothing was registered, nothing to undo
