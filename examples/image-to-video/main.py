"""The image-to-video endpoint (issue 4). Model code lives in wan/ and is imported inside the
function body, so discovery and the build never import torch."""
from svc import Endpoint, GpuGroup, save_output_file


@Endpoint(
    name="image-to-video",
    gpu=GpuGroup.ADA_80_PRO,
    workers=(0, 1),
    execution_timeout=3600,
    # The weights (~60 GB) live on the network volume `wan-weights`, at /platform-volume in the
    # workers: README.md, "Weights on a network volume".
    volume="wan-weights",
    env={"WAN_CONFIG": "wan2.2-i2v-a14b", "WAN_CHECKPOINT_DIR": "/platform-volume/Wan2.2-I2V-A14B",
         "WAN_SOLVER": "unipc"},
)
def generate(prompt=None, image=None, negative_prompt=None, size=None, num_inference_steps=None,
             guidance=None, duration=None, flow_shift=None, seed=None,
             enable_prompt_optimization=None, enable_safety_checker=None, enable_step_cache=None):
    from wan.service import run_job

    return run_job(
        lambda path: save_output_file(path, content_type="video/mp4"),
        prompt=prompt, image=image, negative_prompt=negative_prompt, size=size,
        num_inference_steps=num_inference_steps, guidance=guidance, duration=duration,
        flow_shift=flow_shift, seed=seed, enable_prompt_optimization=enable_prompt_optimization,
        enable_safety_checker=enable_safety_checker, enable_step_cache=enable_step_cache)
