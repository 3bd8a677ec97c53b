"""The worker's settings, from the variables the platform's supervisor sets (contracts section 4)."""
import os
from dataclasses import dataclass
from typing import Mapping, Optional

DEFAULT_PING_INTERVAL_S = 10.0


@dataclass(frozen=True)
class WorkerEnv:
    worker_id: str
    token: str
    endpoint_name: str
    take_url: str
    done_url: str  # with `$ID` in place of the job id
    stream_url: str  # with `$ID` in place of the job id
    ping_url: str
    signals_url: str
    ping_interval: float
    lb_port: Optional[int]

    @classmethod
    def from_environ(cls, endpoint_name: str, environ: Mapping[str, str] = os.environ) -> "WorkerEnv":
        worker_id = environ.get("SVC_WORKER_ID", "")
        base = environ.get("SVC_API_BASE", "").rstrip("/")
        # Each URL has its own variable; derive it from the base when only that is given.
        prefix = f"{base}/v2/_worker/{worker_id}" if base and worker_id else ""

        def url(var: str, suffix: str) -> str:
            return environ.get(var) or (prefix + suffix if prefix else "")

        port = environ.get("SVC_LB_PORT")
        return cls(
            worker_id=worker_id,
            token=environ.get("SVC_WORKER_TOKEN", ""),
            endpoint_name=endpoint_name,
            take_url=url("SVC_JOB_TAKE_URL", "/job-take"),
            done_url=url("SVC_JOB_DONE_URL", "/job-done/$ID"),
            stream_url=url("SVC_JOB_STREAM_URL", "/job-stream/$ID"),
            ping_url=url("SVC_PING_URL", "/ping"),
            signals_url=url("SVC_SIGNALS_URL", "/signals"),
            ping_interval=float(environ.get("SVC_PING_INTERVAL") or DEFAULT_PING_INTERVAL_S),
            lb_port=int(port) if port else None,
        )
