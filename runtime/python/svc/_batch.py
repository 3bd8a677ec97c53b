"""Request batching's logic apart from transport (docs/platform.md, "Request batching").

A batched function (`Endpoint(..., batch=Batch(...))`) takes every parameter as a list, one value
per job: `def embed(text: List[str]) -> List[dict]`. Each job's input is one item's fields
(`{"text": "a"}`), checked on its own against the element types (`str`), so one bad item fails
that job only; the good items are called together, and the function returns one result per item,
in order. A result that is an Exception fails its own job.
"""
import functools
import inspect
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._input_check import check_input

_LISTS = (list, List)


def _element(annotation: Any) -> Any:
    """`List[T]` / `list[T]` → T; anything else → Any (no check beyond the field names)."""
    if typing.get_origin(annotation) in _LISTS or annotation in _LISTS:
        args = typing.get_args(annotation)
        return args[0] if args else Any
    return Any


@functools.lru_cache(maxsize=64)
def _item_signature(fn: Callable) -> Callable:
    """A stand-in with `fn`'s parameters, each annotated with its element type: what one job's input is checked against."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an unresolvable forward reference: names are still checked
        hints = {}
    signature = inspect.signature(fn)

    def item(**kwargs: Any) -> None:  # never called
        return None

    params = [p.replace(annotation=_element(hints.get(p.name, Any))) for p in signature.parameters.values()]
    item.__signature__ = signature.replace(parameters=params, return_annotation=inspect.Signature.empty)  # type: ignore[attr-defined]
    item.__annotations__ = {p.name: p.annotation for p in params}
    item.__name__ = getattr(fn, "__name__", "function")
    return item


def item_kwargs(fn: Callable, data: Any) -> Dict[str, Any]:
    """One job's fields checked against the batched function's element types (InputInvalid if not),
    with each parameter's default filled in (the call takes every parameter as a list)."""
    kwargs = check_input(_item_signature(fn), data)
    for p in inspect.signature(fn).parameters.values():
        if p.name not in kwargs and p.default is not inspect.Parameter.empty:
            kwargs[p.name] = p.default
    return kwargs


def batch_call_kwargs(fn: Callable, items: List[Dict[str, Any]]) -> Dict[str, List[Any]]:
    """The items' fields as one list per parameter, in item order."""
    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    extra = sorted({key for item in items for key in item if key not in names})
    return {name: [item.get(name) for item in items] for name in names + extra}


class BatchResultError(TypeError):
    """The batched function did not return one result per input."""


def split_results(fn: Callable, results: Any, count: int) -> List[Tuple[Any, Optional[BaseException]]]:
    """(output, error) per item; the whole batch fails when `results` is not a list of `count` results."""
    name = getattr(fn, "__name__", "function")
    if not isinstance(results, (list, tuple)):
        error: BaseException = BatchResultError(f"{name}() is batched: it must return a list of {count} results "
                                                f"(one per input, in order), got {type(results).__name__}")
        return [(None, error)] * count
    if len(results) != count:
        error = BatchResultError(f"{name}() is batched: it returned {len(results)} results for {count} inputs; "
                                 "return one result per input, in order")
        return [(None, error)] * count
    return [(None, r) if isinstance(r, BaseException) else (r, None) for r in results]
