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

