"""Turning inputs into keyword arguments for a user function, and call arguments back into input."""
import functools
import inspect
import typing
from typing import Any, Callable, Dict, Mapping

from ._input_check import check_input
from .errors import InputValidationError


def kwargs_for(fn: Callable, data: Any) -> Dict[str, Any]:
    """Check a job input / request body against `fn`'s signature before calling it.

    A mismatch is the caller's fault, so it is an InputValidationError (HTTP 400) listing every bad
    field (INPUT_INVALID, ._input_check), not a TypeError from inside the call that would look
    like a server failure.
    """
    return check_input(fn, data)


@functools.lru_cache(maxsize=256)
def _signature(fn: Callable) -> inspect.Signature:
    """A function's signature, read once: `.map` binds every item's arguments to it."""
    return inspect.signature(fn)


def input_for(fn: Callable, args: tuple, kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """The JSON input object for a remote call: positional arguments become keyword arguments."""
    try:
        bound = _signature(fn).bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{fn.__name__}(): {err}") from None
    payload: Dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            payload.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise TypeError(f"{fn.__name__}(): *args cannot be sent to another endpoint")
        else:
            payload[name] = value
    return payload


_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _coerce(value: str, annotation: Any) -> Any:
    if annotation in (int, "int"):
        return int(value)
    if annotation in (float, "float"):
        return float(value)
    if annotation in (bool, "bool"):
        if value.lower() not in _BOOLS:
            raise ValueError(f"not a boolean: {value!r}")
        return _BOOLS[value.lower()]
    return value


def query_kwargs(fn: Callable, query: Mapping[str, list]) -> Dict[str, Any]:
    """Query parameters (from parse_qs) as keyword arguments.

    Query values are strings; parameters annotated int, float or bool are converted so that
    `def item(id: int)` works the same from a GET as from a JSON body. Repeated keys give a list.
    """
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        hints = getattr(fn, "__annotations__", {})
    out: Dict[str, Any] = {}
    for name, values in query.items():
        annotation = hints.get(name)
        try:
            converted = [_coerce(v, annotation) for v in values]
        except ValueError as err:
            raise InputValidationError(f"query parameter {name!r}: {err}") from None
        out[name] = converted[0] if len(converted) == 1 else converted
    return out
