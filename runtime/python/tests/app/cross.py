"""Endpoints that call other endpoints (contracts section 5)."""
import asyncio

from svc import Endpoint, RemoteCallError

from .api import add, shout
from .batched import batched


@Endpoint(name="sq")
async def square(x):
    return x * x


@Endpoint(name="caller-sync")
def call_sync(x):
    try:
        # A sync caller runs in a thread with no loop, so it can drive the async remote function.
        return {"sq": asyncio.run(square(x=x)), "add": add(x, b=1)}
    except RemoteCallError as err:
        return {"remote_error": str(err), "status": err.status}


@Endpoint(name="caller-async")
async def call_async(x):
    return {"sq": await square(x), "shout": await shout(text="hi")}


@Endpoint(name="caller-batched")
def call_batched(ns):
    try:
        return {"out": batched(n=ns)}  # a batched function called with lists: one job per item
    except RemoteCallError as err:
        return {"remote_error": str(err)}
