"""A batched function for the worker tests: each parameter a list, one result per input."""
import time
from typing import List

from svc import Batch, Endpoint


@Endpoint(name="batched", batch=Batch(max_size=4, max_wait_ms=300))
def batched(n: List[int], sleep: List[float] = 0.0) -> List[dict]:
    time.sleep(max(sleep))
    return [{"n": v, "batch": len(n)} for v in n]
