"""A load-balanced endpoint: several HTTP routes served by the same workers."""
from svc import Endpoint

api = Endpoint(name="api", cpu="cpu3c-2-4", workers=(1, 3))


@api.get("/health")
def health() -> dict:
    return {"ok": True}


@api.post("/echo")
def echo(text: str, repeat: int = 1) -> dict:
    return {"text": " ".join([text] * repeat)}
