"""A queue-based CPU worker using a dependency from requirements.txt."""
from svc import Endpoint


@Endpoint(name="cpu-worker", cpu="cpu3c-2-4", workers=(0, 2))
def describe(size_bytes: int = 1536) -> dict:
    import humanize

    return {"size": humanize.naturalsize(size_bytes), "bytes": size_bytes}
