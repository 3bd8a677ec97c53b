"""LoRA adapters merged at load (wan/lora.py): the published Lightning key layout, rank and alpha
from the file, LightX2V's diff keys, and the clear failures: a key that adapts nothing, a shape
that does not fit, a wrong number of files for the model's experts."""
import os

import pytest
import torch

from tiny_checkpoint import write_adapter, write_tiny_adapters
from wan.config import TINY
from wan.loader import load_components
from wan.lora import AdapterError, adapter_files, merge_adapter
from wan.transformer import WanTransformer
from wan.weights import iter_safetensors, random_init, write_safetensors


def _expert():
    return random_init(WanTransformer(TINY.transformer), 5)


def test_merge_adds_alpha_over_rank_times_up_down(tmp_path):
    model, base = _expert(), _expert()
    path = str(tmp_path / "a.safetensors")
    assert write_adapter(path, model, rank=4, alpha=8.0) == 2 * 10
    tensors = dict(iter_safetensors(path))
    assert tensors["diffusion_model.blocks.1.ffn.2.alpha"].shape == ()   # a 0-d scalar, as published
    assert merge_adapter(model, path) == 20
    down = tensors["diffusion_model.blocks.1.cross_attn.v.lora_down.weight"]
    up = tensors["diffusion_model.blocks.1.cross_attn.v.lora_up.weight"]
    got = model.blocks[1].cross_attn.v.weight - base.blocks[1].cross_attn.v.weight
    assert torch.allclose(got, 8.0 / 4 * up @ down, atol=1e-6)
    # what the file does not adapt is untouched
    assert torch.equal(model.blocks[1].cross_attn.v.bias, base.blocks[1].cross_attn.v.bias)
    assert torch.equal(model.head.head.weight, base.head.head.weight)


def test_unprefixed_keys_missing_alpha_and_diffs(tmp_path):
    model, base = _expert(), _expert()
    down, up = torch.randn(2, 24), torch.randn(24, 2)
    diff_b, diff_m = torch.randn(24), torch.randn(1, 6, 24)
    path = str(tmp_path / "b.safetensors")
    write_safetensors(path, {"blocks.0.self_attn.q.lora_down.weight": down, "blocks.0.self_attn.q.lora_up.weight": up,
                             "blocks.0.self_attn.q.diff_b": diff_b, "blocks.0.diff_m": diff_m})
    assert merge_adapter(model, path) == 3
    assert torch.allclose(model.blocks[0].self_attn.q.weight - base.blocks[0].self_attn.q.weight, up @ down, atol=1e-6)
    assert torch.allclose(model.blocks[0].self_attn.q.bias - base.blocks[0].self_attn.q.bias, diff_b)
    assert torch.allclose(model.blocks[0].modulation - base.blocks[0].modulation, diff_m)


def test_merge_rounds_once_into_bf16(tmp_path):
    model = _expert().to(torch.bfloat16)
    w0 = model.blocks[0].ffn[0].weight.float().clone()
    path = str(tmp_path / "c.safetensors")
    write_adapter(path, model, rank=2, alpha=2.0)
    merge_adapter(model, path)
    t = dict(iter_safetensors(path))
    want = (w0 + t["diffusion_model.blocks.0.ffn.0.lora_up.weight"] @ t["diffusion_model.blocks.0.ffn.0.lora_down.weight"]).bfloat16()
    assert model.blocks[0].ffn[0].weight.dtype == torch.bfloat16 and torch.equal(model.blocks[0].ffn[0].weight, want)


def test_keys_that_adapt_nothing_fail_naming_them(tmp_path):
    path = str(tmp_path / "d.safetensors")
    write_safetensors(path, {"diffusion_model.blocks.7.self_attn.q.lora_down.weight": torch.zeros(2, 24),
                             "diffusion_model.blocks.7.self_attn.q.lora_up.weight": torch.zeros(24, 2)})
    with pytest.raises(AdapterError, match=r"2 adapter keys match no weight.*blocks\.7\.self_attn\.q"):
        merge_adapter(_expert(), path)
    write_safetensors(path, {"blocks.0.self_attn.q.lora_down.weight": torch.zeros(2, 25),
                             "blocks.0.self_attn.q.lora_up.weight": torch.zeros(24, 2)})
    with pytest.raises(AdapterError, match=r"do not make the model's \(24, 24\)"):
        merge_adapter(_expert(), path)
    with pytest.raises(AdapterError, match="not found"):
        merge_adapter(_expert(), str(tmp_path / "none.safetensors"))


def test_adapter_files_from_a_lightning_folder_or_a_list(tmp_path):
    folder = str(tmp_path / "lightning")
    high, low = write_tiny_adapters(folder)
    assert os.path.basename(high) == "high_noise_model.safetensors" and os.path.basename(low) == "low_noise_model.safetensors"
    assert adapter_files(folder, TINY.expert_dirs) == [high, low]
    assert adapter_files(f"{high}, {low}", TINY.expert_dirs) == [high, low]
    with pytest.raises(AdapterError, match="names 1 adapter file.*2 expert"):
        adapter_files(high, TINY.expert_dirs)
    with pytest.raises(AdapterError, match="not found: .*nope"):
        adapter_files(f"{high},{tmp_path}/nope.safetensors", TINY.expert_dirs)


def test_loader_merges_each_experts_own_adapter(tmp_path):
    high, low = write_tiny_adapters(str(tmp_path / "a"))
    base = load_components("tiny")
    w = [e.blocks[0].self_attn.q.weight.clone() for e in base.experts]
    merged = load_components("tiny", adapters=[high, low])
    assert merged.adapters == [high, low]
    for e, w0, path in zip(merged.experts, w, (high, low)):
        t = dict(iter_safetensors(path))
        delta = 8.0 / 4 * t["diffusion_model.blocks.0.self_attn.q.lora_up.weight"] @ t["diffusion_model.blocks.0.self_attn.q.lora_down.weight"]
        assert torch.allclose(e.blocks[0].self_attn.q.weight - w0, delta, atol=1e-6)


def test_alpha_zero_changes_nothing(tmp_path):
    model, base = _expert(), _expert()
    path = str(tmp_path / "zero.safetensors")
    write_safetensors(path, {"diffusion_model.blocks.0.self_attn.q.lora_down.weight": torch.randn(2, 24),
                             "diffusion_model.blocks.0.self_attn.q.lora_up.weight": torch.randn(24, 2),
                             "diffusion_model.blocks.0.self_attn.q.alpha": torch.tensor(0.0)})
    assert merge_adapter(model, path) == 1
    assert torch.equal(model.blocks[0].self_attn.q.weight, base.blocks[0].self_attn.q.weight)


def test_a_file_mixing_prefixed_and_bare_keys_is_refused_untouched(tmp_path):
    model, base = _expert(), _expert()
    down, up = torch.randn(2, 24), torch.randn(24, 2)
    path = str(tmp_path / "mixed.safetensors")
    write_safetensors(path, {"diffusion_model.blocks.0.self_attn.q.lora_down.weight": down,
                             "diffusion_model.blocks.0.self_attn.q.lora_up.weight": up,
                             "blocks.0.self_attn.q.lora_down.weight": down, "blocks.0.self_attn.q.lora_up.weight": up})
    with pytest.raises(AdapterError, match=r"mixes `diffusion_model\.`-prefixed keys .* with bare ones"):
        merge_adapter(model, path)
    assert torch.equal(model.blocks[0].self_attn.q.weight, base.blocks[0].self_attn.q.weight)


def test_missing_alpha_and_bf16_factors_are_said_once(tmp_path, capsys):
    path = str(tmp_path / "lenient.safetensors")
    write_safetensors(path, {"blocks.0.self_attn.q.lora_down.weight": torch.randn(2, 24, dtype=torch.bfloat16),
                             "blocks.0.self_attn.q.lora_up.weight": torch.randn(24, 2, dtype=torch.bfloat16),
                             "blocks.0.self_attn.k.lora_down.weight": torch.randn(2, 24),
                             "blocks.0.self_attn.k.lora_up.weight": torch.randn(24, 2),
                             "blocks.0.self_attn.k.alpha": torch.tensor(2.0)})
    model, base = _expert(), _expert()
    merge_adapter(model, path)
    merge_adapter(_expert(), path)
    log = capsys.readouterr().err
    assert log.count("1 of 2 LoRA pairs have no alpha; merged at scale 1") == 1
    assert log.count("LoRA factors stored in bfloat16; upcast to float32") == 1
    t = dict(iter_safetensors(path))
    want = t["blocks.0.self_attn.q.lora_up.weight"].float() @ t["blocks.0.self_attn.q.lora_down.weight"].float()
    assert torch.allclose(model.blocks[0].self_attn.q.weight - base.blocks[0].self_attn.q.weight, want, atol=1e-6)
