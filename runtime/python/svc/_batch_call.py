"""Calling a batched function from elsewhere (a cross-endpoint call, `.remote`): one job per item.

A batched function takes every parameter as a list (`embed(text=["a", "b"])`), but each job of its
endpoint is one item (`{"text": "a"}`: docs/platform.md, "Request batching"); the worker gathers
jobs into batches itself. So a call with lists becomes one job per item, sent as `.map` sends them,
and answers the items' outputs in order: what the function returns when called here. A value that
is not a list is the same for every item.
"""
from typing import Any, Callable, Dict, List

CONCURRENCY = 32


def per_item(fn: Callable, payload: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The job inputs of a call with lists: one per item, non-lists repeated."""
    lists = {name: value for name, value in payload.items() if isinstance(value, (list, tuple))}
    lengths = {len(value) for value in lists.values()}
    if len(lengths) > 1:
        shown = ", ".join(f"{name}: {len(value)}" for name, value in lists.items())
        raise ValueError(f"{fn.__name__}() is batched: its list arguments are one value per item and must be as long as each other ({shown})")
    count = lengths.pop() if lengths else 1
    return [{name: (value[i] if name in lists else value) for name, value in payload.items()} for i in range(count)]


def call(fn: Callable, payload: Dict[str, Any], run: Callable[[Dict[str, Any]], Any]) -> List[Any]:
    """`run` (one job) for each item of the call, at most CONCURRENCY at once; the outputs in item order."""
    from .fanout import map_calls  # fanout imports remote, which imports this module

    return list(map_calls(fn, run, per_item(fn, payload), CONCURRENCY, False))
