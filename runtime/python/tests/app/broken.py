"""An endpoint module that cannot be imported: a package that is not installed, at file top."""
import json

import not_installed_pkg  # noqa: F401  (line 4: the tests expect this location)

from svc import Endpoint

api = Endpoint(name="broken-api")


@Endpoint(name="broken")
def broken(value: int = 0) -> dict:
    return {"value": value, "dumped": json.dumps(value)}


@api.get("/hello")
def hello() -> dict:
    return {"hello": "never"}
