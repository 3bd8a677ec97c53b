"""GPU tiers an endpoint can ask for (platform `gpuIds`).

The list is written once, in core/endpoint-schema.ts; `GpuGroup` is generated into `_schema.py`.
"""
from ._schema import GpuGroup

__all__ = ["GpuGroup"]
