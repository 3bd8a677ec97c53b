"""Model configurations: the published image-to-video models and tiny test configs. Each holds
what the serving code reads: architecture, checkpoint layout, frame rate, default negative prompt.
Request defaults (steps, guidance, shift) are the hosted endpoint's, in inputs.py."""
from dataclasses import dataclass
from typing import Optional, Tuple

# The authors' default negative prompt (used when a request's is empty); 2.1 I2V prefixes it.
NEGATIVE_PROMPT = ("色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，"
                   "低质量，JPEG压缩残留，丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，"
                   "毁容的，形态畸形的肢体，手指融合，静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走")
NEGATIVE_PROMPT_21_I2V = "镜头晃动，" + NEGATIVE_PROMPT


@dataclass(frozen=True)
class TransformerConfig:
    dim: int
    ffn_dim: int
    num_heads: int
    num_layers: int
    in_dim: int = 36          # 16 noisy latent + 4 mask + 16 image latent
    out_dim: int = 16
    patch_size: Tuple[int, int, int] = (1, 2, 2)
    freq_dim: int = 256
    text_dim: int = 4096
    text_len: int = 512
    eps: float = 1e-6
    image_dim: Optional[int] = None   # set → 2.1 CLIP image branch (img_emb, k_img/v_img)
    image_tokens: int = 257

    @property
    def head_dim(self) -> int:
        return self.dim // self.num_heads


@dataclass(frozen=True)
class VAEConfig:
    base_dim: int = 96
    z_dim: int = 16
    dim_mult: Tuple[int, ...] = (1, 2, 4, 4)
    num_res_blocks: int = 2
    temporal_downsample: Tuple[bool, ...] = (False, True, True)
    stride: Tuple[int, int, int] = (4, 8, 8)
    version: str = "2.1"             # "2.2": the TI2V-5B VAE (vae22.py)
    dec_dim: Optional[int] = None    # 2.2: the decoder's base width (the encoder's is base_dim)


@dataclass(frozen=True)
class T5Config:
    vocab: int = 256384
    dim: int = 4096
    ffn_dim: int = 10240
    num_heads: int = 64
    num_layers: int = 24
    num_buckets: int = 32
    max_distance: int = 128
    max_len: int = 512
    eps: float = 1e-6


@dataclass(frozen=True)
class ClipVisionConfig:
    """open-clip ViT-H/14 vision tower used by 2.1 I2V (penultimate block output, 257 tokens)."""
    image_size: int = 224
    patch_size: int = 14
    dim: int = 1280
    mlp_ratio: int = 4
    num_heads: int = 16
    num_layers: int = 32
    use_layers: int = 31       # the model uses the output of the first 31 blocks


@dataclass(frozen=True)
class ModelConfig:
    name: str
    transformer: TransformerConfig
    vae: VAEConfig
    t5: T5Config
    clip: Optional[ClipVisionConfig] = None
    two_experts: bool = False        # 2.2 A14B: high-noise + low-noise experts
    first_frame_latent: bool = False  # TI2V-5B: the image is latent frame 0 (per-token timesteps)
    size_720p: Optional[int] = None  # TI2V-5B: the area its 720p sizes mean (1280*704)
    boundary: float = 0.9            # t >= boundary*1000 → high-noise expert
    fps: int = 16
    negative_prompt: str = NEGATIVE_PROMPT
    tiny: bool = False
    tiny_area: int = 64 * 64         # tiny mode replaces the requested area with this
    tiny_max_frames: int = 9
    # checkpoint layout (file / folder names as published)
    t5_file: str = "models_t5_umt5-xxl-enc-bf16.pth"
    vae_file: str = "Wan2.1_VAE.pth"
    clip_file: str = "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth"
    tokenizer_dir: str = "google/umt5-xxl"
    expert_dirs: Tuple[str, ...] = ("",)


WAN22_I2V_A14B = ModelConfig(
    name="wan2.2-i2v-a14b",
    transformer=TransformerConfig(dim=5120, ffn_dim=13824, num_heads=40, num_layers=40),
    vae=VAEConfig(),
    t5=T5Config(),
    two_experts=True,
    boundary=0.9,
    expert_dirs=("high_noise_model", "low_noise_model"),
)

WAN21_I2V_14B = ModelConfig(
    name="wan2.1-i2v-14b",
    transformer=TransformerConfig(dim=5120, ffn_dim=13824, num_heads=40, num_layers=40,
                                  image_dim=1280),
    vae=VAEConfig(),
    t5=T5Config(),
    clip=ClipVisionConfig(),
    negative_prompt=NEGATIVE_PROMPT_21_I2V,
    expert_dirs=("",),
)

# Sizes as in the reference's tiny test configs; two experts so the switch is exercised.
_TINY_T5 = T5Config(vocab=259, dim=32, ffn_dim=64, num_heads=4, num_layers=2)
_TINY_VAE = VAEConfig(base_dim=3, z_dim=16, dim_mult=(1, 1, 1, 1), num_res_blocks=1)

TINY = ModelConfig(
    name="tiny",
    transformer=TransformerConfig(dim=24, ffn_dim=32, num_heads=2, num_layers=2, text_dim=32),
    vae=_TINY_VAE,
    t5=_TINY_T5,
    two_experts=True,
    tiny=True,
    expert_dirs=("high_noise_model", "low_noise_model"),  # its checkpoint's layout (tests/tiny_checkpoint.py): A14B's
)

TINY_21 = ModelConfig(
    name="tiny-2.1",
    transformer=TransformerConfig(dim=24, ffn_dim=32, num_heads=2, num_layers=2, text_dim=32,
                                  image_dim=4, image_tokens=5),
    vae=_TINY_VAE,
    t5=_TINY_T5,
    clip=ClipVisionConfig(image_size=28, patch_size=14, dim=4, mlp_ratio=2, num_heads=1,
                          num_layers=2, use_layers=1),
    negative_prompt=NEGATIVE_PROMPT_21_I2V,
    tiny=True,
)

# Wan 2.2 TI2V-5B: one transformer, the 2.2 VAE, the image as the first latent frame; 24 fps.
WAN22_TI2V_5B = ModelConfig(
    name="wan2.2-ti2v-5b",
    transformer=TransformerConfig(dim=3072, ffn_dim=14336, num_heads=24, num_layers=30,
                                  in_dim=48, out_dim=48),
    vae=VAEConfig(base_dim=160, dec_dim=256, z_dim=48, stride=(4, 16, 16), version="2.2"),
    t5=T5Config(),
    first_frame_latent=True,
    size_720p=1280 * 704,
    fps=24,
    vae_file="Wan2.2_VAE.pth",
    expert_dirs=("",),
)

TINY_5B = ModelConfig(
    name="tiny-5b",
    transformer=TransformerConfig(dim=24, ffn_dim=32, num_heads=2, num_layers=2, text_dim=32,
                                  in_dim=48, out_dim=48),
    vae=VAEConfig(base_dim=4, dec_dim=4, z_dim=48, dim_mult=(1, 1, 1, 1), num_res_blocks=1,
                  stride=(4, 16, 16), version="2.2"),
    t5=_TINY_T5,
    first_frame_latent=True,
    fps=24,
    tiny=True,
    tiny_area=128 * 64,
)

CONFIGS = {c.name: c for c in (WAN22_I2V_A14B, WAN21_I2V_14B, WAN22_TI2V_5B, TINY, TINY_21, TINY_5B)}
ALIASES = {"2.2": "wan2.2-i2v-a14b", "a14b": "wan2.2-i2v-a14b", "2.1": "wan2.1-i2v-14b",
           "5b": "wan2.2-ti2v-5b", "ti2v-5b": "wan2.2-ti2v-5b"}


def get_config(name: str) -> ModelConfig:
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in CONFIGS:
        raise KeyError(f"unknown WAN_CONFIG {name!r}; choose one of {sorted(CONFIGS)}")
    return CONFIGS[key]
