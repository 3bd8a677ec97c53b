"""A load-balanced test endpoint."""
from svc import Endpoint, InputValidationError

api = Endpoint(name="api")


@api.post("/add")
def add(a: int, b: int) -> int:
    return a + b


@api.post("/shout")
async def shout(text: str) -> str:
    return text.upper() + "!"


@api.get("/item")
def item(id: int, verbose: bool = False, tag: str = "") -> dict:
    return {"id": id, "verbose": verbose, "tag": tag}


@api.delete("/item")
def remove(id: int) -> dict:
    return {"removed": id}


@api.post("/boom")
def boom() -> None:
    raise RuntimeError("kaboom")


@api.post("/picky")
def picky(n: int) -> int:
    if n < 0:
        raise InputValidationError("n must be >= 0")
    return n
