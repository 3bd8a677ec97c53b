import json
import os
import struct

import pytest
import torch

from wan.config import TINY, WAN22_I2V_A14B
from wan.loader import WeightsNotFound, check_checkpoint
from wan.tokenizer import ByteTokenizer, UnigramTokenizer
from wan.transformer import WanTransformer
from wan.weights import (empty_init, iter_checkpoint, load_into, materialize, random_init,
                         read_safetensors_header, write_safetensors)


def test_safetensors_round_trip(tmp_path):
    ts = {"a": torch.arange(6, dtype=torch.float32).reshape(2, 3),
          "b": torch.tensor([1.5, -2.25], dtype=torch.bfloat16),
          "c": torch.tensor([[7]], dtype=torch.int64)}
    p = str(tmp_path / "x.safetensors")
    write_safetensors(p, ts)
    with open(p, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        assert json.loads(f.read(n))["b"]["dtype"] == "BF16"
    header, base = read_safetensors_header(p)
    assert base == 8 + n and set(header) == {"a", "b", "c"}
    got = dict(iter_checkpoint(p))
    for k, v in ts.items():
        assert got[k].dtype == v.dtype and torch.equal(got[k], v)


def test_sharded_checkpoint_loads_into_meta_model(tmp_path):
    src = random_init(WanTransformer(TINY.transformer), 9).eval()
    sd = src.state_dict()
    keys = sorted(sd)
    write_safetensors(str(tmp_path / "m-00001-of-00002.safetensors"), {k: sd[k] for k in keys[::2]})
    write_safetensors(str(tmp_path / "m-00002-of-00002.safetensors"), {k: sd[k] for k in keys[1::2]})
    with empty_init("meta"):
        dst = WanTransformer(TINY.transformer)
    dst = materialize(dst, "cpu", torch.float32)
    load_into(dst, str(tmp_path))
    x, ctx, t = torch.randn(1, 36, 1, 2, 2), torch.randn(1, 512, 32), torch.tensor([300.0])
    with torch.no_grad():
        assert torch.equal(src(x, t, ctx), dst.eval()(x, t, ctx))


def test_load_is_strict(tmp_path):
    sd = random_init(WanTransformer(TINY.transformer), 9).state_dict()
    sd.pop("head.modulation")
    sd["extra.weight"] = torch.zeros(1)
    p = str(tmp_path / "bad.safetensors")
    write_safetensors(p, sd)
    with pytest.raises(ValueError, match="head.modulation"):
        load_into(WanTransformer(TINY.transformer), p)


def test_missing_weights_message(tmp_path):
    with pytest.raises(WeightsNotFound, match="WAN_CHECKPOINT_DIR"):
        check_checkpoint(WAN22_I2V_A14B, None)
    (tmp_path / "high_noise_model").mkdir()
    with pytest.raises(WeightsNotFound) as e:
        check_checkpoint(WAN22_I2V_A14B, str(tmp_path))
    msg = str(e.value)
    for part in ("low_noise_model", "Wan2.1_VAE.pth", "models_t5_umt5-xxl-enc-bf16.pth",
                 "high_noise_model/*.safetensors", "tokenizer.json"):
        assert part in msg


def test_tokenizers(tmp_path):
    assert ByteTokenizer()("a  b") == [ord("a") + 3, ord(" ") + 3, ord("b") + 3, 1]
    vocab = [["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["\u2581", -2.0], ["\u2581hello", -1.0],
             ["\u2581he", -1.5], ["llo", -1.5], ["\u2581w", -3.0], ["o", -2.0], ["r", -2.0],
             ["ld", -2.0], ["world", -9.0]]
    spec = {"model": {"type": "Unigram", "unk_id": 2, "vocab": vocab},
            "added_tokens": [{"id": 1, "content": "</s>"}]}
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(spec))
    tok = UnigramTokenizer(str(p))
    # "▁hello" (-1) beats "▁he"+"llo" (-3); "▁w o r ld" (-9) beats "▁"+"world" (-11)
    assert tok("hello world") == [4, 7, 8, 9, 10, 1]
    assert tok("hello   world") == tok("hello world")   # whitespace runs collapse
    assert tok("hello z") == [4, 3, 2, 1]   # unknown character → unk


def _sharded(tmp_path, sd):
    keys = sorted(sd)
    write_safetensors(str(tmp_path / "m-00001-of-00002.safetensors"), {k: sd[k] for k in keys[::2]})
    write_safetensors(str(tmp_path / "m-00002-of-00002.safetensors"), {k: sd[k] for k in keys[1::2]})


def test_reads_split_in_chunks_over_threads_fill_every_byte(tmp_path, monkeypatch):
    import wan.weights as weights
    sd = random_init(WanTransformer(TINY.transformer), 9).state_dict()
    _sharded(tmp_path, sd)
    monkeypatch.setattr(weights, "READ_CHUNK", 40)  # tensors cut into many reads, spread over threads
    with empty_init("meta"):
        dst = WanTransformer(TINY.transformer)
    dst = materialize(dst, "cpu", torch.float32)
    load_into(dst, str(tmp_path), threads=3)
    got = dst.state_dict()
    assert all(torch.equal(got[k], v) for k, v in sd.items())


def test_a_dtype_the_file_does_not_have_goes_through_the_staging_copy(tmp_path, monkeypatch):
    import wan.weights as weights
    sd = random_init(WanTransformer(TINY.transformer), 9).state_dict()
    _sharded(tmp_path, sd)  # fp32 on disk
    monkeypatch.setattr(weights, "READ_CHUNK", 64)
    with empty_init("meta"):
        dst = WanTransformer(TINY.transformer)
    dst = materialize(dst, "cpu", torch.bfloat16)
    load_into(dst, str(tmp_path), threads=2)
    got = dst.state_dict()
    assert all(torch.equal(got[k], v.to(torch.bfloat16)) for k, v in sd.items())


def test_a_wrong_shape_is_refused_before_any_data_is_read(tmp_path, monkeypatch):
    import wan.weights as weights
    sd = random_init(WanTransformer(TINY.transformer), 9).state_dict()
    sd["head.modulation"] = torch.zeros(3)
    write_safetensors(str(tmp_path / "m.safetensors"), sd)
    monkeypatch.setattr(weights, "_pread_into", lambda *a: pytest.fail("read before the shapes were checked"))
    with pytest.raises(ValueError, match="head.modulation has shape"):
        load_into(WanTransformer(TINY.transformer), str(tmp_path / "m.safetensors"))
