"""Runs the published reference implementations' image-to-video sampling on the CPU, for the
parity tests (test_parity.py). No reference code is in this repository: the checkouts are fetched
beside it and named on the command line; this script only assembles and drives them.

    /usr/bin/python3 reference_harness.py --ref <checkout with wan/> [--magcache <magcache_generate.py>]
                                          --deps <folder of pip packages> IN.pt OUT.pt

References: standard and cached modes: the model authors' Wan2.2 (`WanI2V.generate`), with
MagCache's own `magcache_forward` / `init_magcache` and its I2V-A14B setup block read out of
`MagCache4Wan2.2/magcache_generate.py`; distilled mode: Wan2.2-Lightning (the distillation
authors' fork: its LoRA merge, Euler scheduler and config defaults).

What is adapted, and why (nothing else is touched):
- CUDA: `WanI2V.__init__` (which builds `cuda:0` and loads full checkpoints) is skipped: the object
  gets the tiny reference `WanModel`s with the test's weights, `device` cpu, `param_dtype` fp32 (the
  CPU runs fp32; bf16 is the CUDA precision); `torch.cuda.current_device` (a default argument
  evaluated at import) answers cpu; flash-attention (CUDA only) is replaced by the reference's own
  SDPA path at fp32, and on torch 1.13 (no SDPA) by the plain softmax(QKᵀ/√d)·V it computes.
- Packages this CPU machine lacks that the tested path does not use: torch.distributed FSDP (fails
  to import on torch 1.13 with Python 3.11), transformers (the umT5 tokenizer), torchvision (only
  `to_tensor`: PIL → float CHW / 255, given here).
- Text and VAE: the umT5 states and the VAE latent of the first-frame video come from IN.pt (the
  example's tiny T5 and VAE; the tokenizer would need a download); the reference's VAE input is
  returned in OUT.pt, so the test checks its image preprocessing, and `vae.decode` returns the
  final latent, which is what is compared."""
import argparse
import ast
import importlib.machinery
import math
import sys
import types


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__spec__ = importlib.machinery.ModuleSpec(name, None)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def _prepare_imports(ref, deps):
    sys.path[:0] = [deps, ref]
    import diffusers.configuration_utils  # noqa: F401  (before the stubs: it probes installed packages)
    import diffusers.models.modeling_utils  # noqa: F401
    import diffusers.schedulers.scheduling_utils  # noqa: F401
    import diffusers.utils.torch_utils  # noqa: F401
    import numpy as np
    import torch
    import torch.nn.functional as F

    if not hasattr(F, "scaled_dot_product_attention"):
        def sdpa(q, k, v, attn_mask=None, is_causal=False, dropout_p=0.0):
            assert attn_mask is None and not is_causal and dropout_p == 0.0
            s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
            return torch.matmul(s.softmax(-1), v)
        F.scaled_dot_product_attention = sdpa

    def to_tensor(img):
        a = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy())
        return a.permute(2, 0, 1).float().div(255)

    tf = _module("torchvision.transforms.functional", to_tensor=to_tensor)
    tr = _module("torchvision.transforms", functional=tf)
    _module("torchvision", transforms=tr)
    _module("transformers", AutoTokenizer=None)
    # packages of the reference, without running their __init__ (which imports every task)
    for name in ("wan", "wan.modules", "wan.utils", "wan.distributed"):
        _module(name, __path__=[f"{ref}/{name.replace('.', '/')}"])
    _module("wan.distributed.fsdp", shard_model=None)
    torch.cuda.current_device = lambda: torch.device("cpu")


def _magcache(script, ns):
    """The MagCache script's functions, and its I2V-A14B setup block (the `if args.use_magcache:`
    holding `init_magcache(wan_i2v.high_noise_model, ...)`), executed as written."""
    tree = ast.parse(open(script, encoding="utf-8").read())
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)
             and n.name in ("nearest_interp", "get_timesteps", "magcache_forward", "init_magcache")]
    exec(compile(ast.Module(body=funcs, type_ignores=[]), script, "exec"), ns)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "args.use_magcache":
            if "init_magcache(wan_i2v.high_noise_model" in ast.unparse(node):
                return ast.Module(body=node.body, type_ignores=[])
    raise SystemExit(f"{script}: no I2V MagCache setup block found")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("--deps", required=True)
    ap.add_argument("--magcache")
    ap.add_argument("inp")
    ap.add_argument("out")
    a = ap.parse_args()
    _prepare_imports(a.ref, a.deps)

    import functools

    import numpy as np
    import torch
    import torch.cuda.amp as amp
    import torch.nn.functional as F
    from PIL import Image

    import wan.modules.attention as attention_mod
    import wan.modules.model as model_mod
    from wan.configs import WAN_CONFIGS
    from wan.image2video import WanI2V

    job = torch.load(a.inp)
    torch.set_num_threads(1)
    model_mod.flash_attention = functools.partial(attention_mod.attention, dtype=torch.float32)

    # What each forward was given and whether its blocks ran.
    records = []
    embed = model_mod.sinusoidal_embedding_1d

    def sinusoid(dim, position):
        records[-1]["t"] = float(position.flatten()[0])
        return embed(dim, position)
    model_mod.sinusoidal_embedding_1d = sinusoid

    cfg = WAN_CONFIGS["i2v-A14B"]
    self = WanI2V.__new__(WanI2V)
    self.device, self.config, self.rank = torch.device("cpu"), cfg, 0
    self.t5_cpu, self.init_on_cpu, self.sp_size = True, True, 1
    self.num_train_timesteps, self.boundary = cfg.num_train_timesteps, cfg.boundary
    self.param_dtype = torch.float32
    self.vae_stride, self.patch_size = cfg.vae_stride, cfg.patch_size
    self.sample_neg_prompt = cfg.sample_neg_prompt

    texts = job["texts"]
    self.text_encoder = lambda prompts, device: [texts[prompts[0]].to(device)]
    seen = {}

    class VAE:
        def encode(self, videos):
            seen["video"] = videos[0].clone()
            return [job["latent_y"]]

        def decode(self, zs):
            seen["latent"] = zs[0].clone()
            return [zs[0]]
    self.vae = VAE()

    experts = []
    for i, state in enumerate(job["experts"]):
        m = model_mod.WanModel(**job["model_kwargs"])
        m.load_state_dict(state, strict=True)
        if job.get("adapters"):
            from wan.utils.utils import load_and_merge_lora_weight_from_safetensors
            m = load_and_merge_lora_weight_from_safetensors(m, job["adapters"][i])
        m = self._configure_model(m, use_sp=False, dit_fsdp=False, shard_fn=None, convert_model_dtype=False)
        m.register_forward_pre_hook(lambda mod, inp, i=i: records.append({"expert": i, "ran": False}))
        m.blocks[0].register_forward_pre_hook(lambda mod, inp: records[-1].update(ran=True))
        experts.append(m)
    self.high_noise_model, self.low_noise_model = experts

    steps, shift, guide, solver = job["steps"], job["shift"], job["guidance"], job["solver"]
    if job["mode"] == "distilled":   # the distillation authors' defaults (their i2v-A14B config)
        steps, shift, guide, solver = cfg.sample_steps, cfg.sample_shift, cfg.sample_guide_scale, "euler"
    mag_ratios = None
    if job["mode"] == "cached":
        ns = {"np": np, "torch": torch, "amp": amp, "F": F, "sinusoidal_embedding_1d": sinusoid}
        import typing
        ns.update({k: getattr(typing, k) for k in ("Optional", "Union", "List", "Tuple")})
        block = _magcache(a.magcache, ns)
        p = job["magcache"]
        ns["args"] = types.SimpleNamespace(sample_shift=shift, sample_steps=steps, magcache_thresh=p["threshold"],
                                           magcache_K=p["max_skips"], retention_ratio=p["retention"])
        ns["cfg"], ns["wan_i2v"] = cfg, self
        exec(compile(block, a.magcache, "exec"), ns)
        mag_ratios = [float(r) for r in ns["mag_ratios"]]

    image = Image.fromarray(job["image"])
    self.generate(job["prompt"], image, max_area=job["area"], frame_num=job["frames"], shift=shift,
                  sample_solver=solver, sampling_steps=steps, guide_scale=guide,
                  n_prompt=job["negative_prompt"], seed=job["seed"], offload_model=False)
    torch.save({"latent": seen["latent"], "video": seen["video"], "records": records,
                "mag_ratios": mag_ratios, "steps": steps, "shift": shift, "guidance": guide,
                "solver": solver}, a.out)


if __name__ == "__main__":
    main()
