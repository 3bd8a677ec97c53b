"""A job's input checked against the function's signature before the function runs.

As FastAPI and BentoML users expect: every field is checked against its annotation (int, float,
str, bool, None, list/tuple/set/dict and their typed forms, Optional and unions, Literal, Enum,
TypedDict, dataclasses), defaults fill what is missing, unknown fields are refused, and one
INPUT_INVALID error lists every bad field with the type it expected and what came. Annotations it
does not know (a user's plain class, an unresolvable string) put no constraint, and a function
without annotations gets only the name checks. Values come back converted where JSON has no form
of their own: a tuple, a set, an Enum member, a dataclass instance, a float from an integer.
Pure logic: the worker loops and the LB server call `check_input` (docs/contracts.md, "Inputs").
"""
import dataclasses
import enum
import functools
import inspect
import json
import typing
from typing import Any, Callable, Dict, List, Tuple

from .errors import InputValidationError

try:  # Python 3.10+: `int | None`
    from types import UnionType as _UnionType
except ImportError:  # pragma: no cover - Python 3.9
    _UnionType = None  # type: ignore[assignment,misc]

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_NO_CHECK = object()
_UNKNOWN = "no such field"
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


class InputInvalid(InputValidationError):
    """INPUT_INVALID: `fields` holds one {"field", "expected", "got"} per bad field."""

    def __init__(self, function: str, fields: List[Dict[str, str]]) -> None:
        lines = [f"  {f['field']}: {_wanted(f['expected'])}, got {f['got']}" for f in fields]
        noun = "field" if len(fields) == 1 else "fields"
        super().__init__(f"INPUT_INVALID: the input of {function}() does not match its signature ({len(fields)} {noun}):\n" + "\n".join(lines))
        self.code = "INPUT_INVALID"
        self.fields = fields


@functools.lru_cache(maxsize=256)
def _plan(fn: Callable) -> Tuple[Tuple[Tuple[str, Any, bool], ...], bool, Tuple[str, ...]]:
    """Per function, once: (name, annotation, required) of each named parameter, whether **kwargs
    takes other names, and the positional-only names (not fillable from JSON)."""
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an unresolvable forward reference: no type checks rather than none at all
        hints = {}
    named = tuple(
        (p.name, hints.get(p.name, _NO_CHECK), p.default is inspect.Parameter.empty)
        for p in signature.parameters.values()
        if p.kind in _NAMED
    )
    var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    positional_only = tuple(p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.POSITIONAL_ONLY)
    return named, var_keyword, positional_only


def check_input(fn: Callable, data: Any) -> Dict[str, Any]:
    """The keyword arguments for `fn` from a job's input, or InputInvalid listing every bad field."""
    name = getattr(fn, "__name__", "function")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputValidationError(f"INPUT_INVALID: the input of {name}() must be a JSON object of its keyword arguments, got {_got(data)}")
    named, var_keyword, positional_only = _plan(fn)
    problems: List[Dict[str, str]] = []
    known = {field for field, _, _ in named}
    takes = ", ".join(sorted(known)) or "no fields"
    for field in data:
        if field in positional_only:
            problems.append({"field": field, "expected": f"{_UNKNOWN} (a positional-only parameter cannot be given by name)", "got": _got(data[field])})
        elif field not in known and not var_keyword:
            problems.append({"field": field, "expected": f"{_UNKNOWN} ({name}() takes {takes})", "got": _got(data[field])})
    kwargs = {k: v for k, v in data.items() if k not in known}
    for field, annotation, required in named:
        if field not in data:
            if required:
                problems.append({"field": field, "expected": f"{_describe(annotation)} (required)", "got": "nothing"})
            continue
        kwargs[field] = _check(data[field], annotation, field, problems)
    if problems:
        raise InputInvalid(name, problems)
    return kwargs


def _check(value: Any, tp: Any, path: str, problems: List[Dict[str, str]]) -> Any:
    """`value` converted to `tp`, or unchanged with a problem added for each place it does not fit."""
    if tp is _NO_CHECK or tp is Any or tp is inspect.Parameter.empty or isinstance(tp, (str, typing.ForwardRef)):
        return value
    bad = lambda: problems.append({"field": path, "expected": _describe(tp), "got": _got(value)})  # noqa: E731
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is type(None) or tp is None:
        return value if value is None else bad()
    if origin is typing.Union or (_UnionType is not None and isinstance(tp, _UnionType)):
        arms = [a for a in args if a is not type(None)]
        if value is not None and len(arms) == 1:  # Optional[X]: say what inside X is wrong
            return _check(value, arms[0], path, problems)
        for arm in args:
            trial: List[Dict[str, str]] = []
            converted = _check(value, arm, path, trial)
            if not trial:
                return converted
        bad()
        return value
    if origin is typing.Literal:
        if any(type(value) is type(a) and value == a for a in args):
            return value
        bad()
        return value
    if tp is bool:
        return value if isinstance(value, bool) else bad()
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return bad()
    if tp is float:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else bad()
    if tp is str:
        return value if isinstance(value, str) else bad()
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if type(member.value) is type(value) and member.value == value:
                return member
        return bad()
    if _is_typeddict(tp):
        return _check_fields(value, tp, path, problems, typing.get_type_hints(tp), set(getattr(tp, "__required_keys__", ())), dict)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        fields = [f for f in dataclasses.fields(tp) if f.init]
        hints = typing.get_type_hints(tp)
        required = {f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}  # type: ignore[misc]
        return _check_fields(value, tp, path, problems, {f.name: hints.get(f.name, _NO_CHECK) for f in fields}, required, lambda kw: tp(**kw))
    container = origin or tp
    if container in (list, tuple, set, frozenset) or container in (typing.Sequence, typing.List):  # noqa: SIM109
        return _check_sequence(value, tp, container, args, path, problems)
    if container is dict or _is_mapping(container):
        if not isinstance(value, dict):
            return bad()
        value_type = args[1] if len(args) == 2 else _NO_CHECK
        return {k: _check(v, value_type, f"{path}.{k}", problems) for k, v in value.items()}
    if origin is None and isinstance(tp, type) and tp in _JSON_TYPES:
        return value if isinstance(value, tp) else bad()
    return value  # a type JSON cannot carry (a user's class): no constraint


def _check_sequence(value: Any, tp: Any, container: Any, args: tuple, path: str, problems: List[Dict[str, str]]) -> Any:
    if not isinstance(value, list):
        problems.append({"field": path, "expected": _describe(tp), "got": _got(value)})
        return value
    if container is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            problems.append({"field": path, "expected": _describe(tp), "got": f"{len(value)} items: {_got(value)}"})
            return value
        return tuple(_check(v, a, f"{path}[{i}]", problems) for i, (v, a) in enumerate(zip(value, args)))
    item_type = args[0] if args else _NO_CHECK
    items = [_check(v, item_type, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    if container in (tuple, set, frozenset):
        try:
            return container(items)
        except TypeError:  # unhashable items for a set: keep the list, the function sees what came
            return items
    return items


def _check_fields(value: Any, tp: Any, path: str, problems: List[Dict[str, str]], hints: Dict[str, Any], required: set, build: Callable) -> Any:
    """A TypedDict or dataclass from a JSON object: known keys typed, required ones present, no others."""
    if not isinstance(value, dict):
        problems.append({"field": path, "expected": _describe(tp), "got": _got(value)})
        return value
    before = len(problems)
    out = {}
    for key, item in value.items():
        if key not in hints:
            problems.append({"field": f"{path}.{key}", "expected": f"{_UNKNOWN} ({tp.__name__} has {', '.join(sorted(hints)) or 'no fields'})", "got": _got(item)})
        else:
            out[key] = _check(item, hints[key], f"{path}.{key}", problems)
    for key in sorted(required - set(value)):
        problems.append({"field": f"{path}.{key}", "expected": f"{_describe(hints.get(key, _NO_CHECK))} (required)", "got": "nothing"})
    return build(out) if len(problems) == before else value


def _wanted(expected: str) -> str:
    return expected.replace(_UNKNOWN, "unknown field", 1) if expected.startswith(_UNKNOWN) else f"expected {expected}"


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__") and hasattr(tp, "__annotations__")


def _is_mapping(container: Any) -> bool:
    return container in (typing.Mapping, typing.Dict) or getattr(container, "__name__", "") in ("Mapping", "MutableMapping")


def _describe(tp: Any) -> str:
    """The annotation as a user wrote it: `int`, `list[int]`, `int | None`, `'fast' | 'slow'`."""
    if tp is _NO_CHECK or tp is inspect.Parameter.empty:
        return "any value"
    if tp is type(None) or tp is None:
        return "None"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) if not isinstance(a, str) else repr(a) for a in args)
    if origin is typing.Union or (_UnionType is not None and isinstance(tp, _UnionType)):
        return " | ".join(_describe(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        inner = ", ".join("..." if a is Ellipsis else _describe(a) for a in args)
        return f"{name}[{inner}]" if inner else name
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return " | ".join(repr(m.value) for m in tp)
    if _is_typeddict(tp) or (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
        return f"{tp.__name__} (an object)"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _got(value: Any) -> str:
    """What came: the JSON value (shortened) and its JSON type."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    kind = next((name for t, name in _JSON_TYPES.items() if type(value) is t), type(value).__name__)
    return f"{text} ({kind})"
