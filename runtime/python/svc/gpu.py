"""GPU tiers an endpoint can ask for (platform `gpuIds`)."""
from enum import Enum


class GpuGroup(str, Enum):
    """A GPU tier. The value is the member name, so `GpuGroup.ADA_24 == "ADA_24"`."""

    AMPERE_16 = "AMPERE_16"
    AMPERE_24 = "AMPERE_24"
    ADA_24 = "ADA_24"
    AMPERE_48 = "AMPERE_48"
    ADA_48_PRO = "ADA_48_PRO"
    AMPERE_80 = "AMPERE_80"
    ADA_80_PRO = "ADA_80_PRO"

    def __str__(self) -> str:  # str(GpuGroup.ADA_24) == "ADA_24", not "GpuGroup.ADA_24"
        return self.value
