"""A job's input is checked against the function's signature before the function runs: every bad
field listed (INPUT_INVALID) with the type it expected and what came; defaults fill what is
missing; values are converted where JSON has no form of their own; unannotated functions get only
the name checks."""
import dataclasses
import enum
from typing import Dict, List, Literal, Optional, Tuple, TypedDict, Union

import pytest

from svc._input_check import InputInvalid, check_input
from svc.errors import InputValidationError


class Options(TypedDict):
    depth: int
    label: str


@dataclasses.dataclass
class Box:
    width: float
    height: float = 1.0


class Speed(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


def typed(size_bytes: int = 1536, ratio: float = 0.5, name: str = "", on: bool = False,
          tags: List[str] = (), counts: Dict[str, int] = None, pair: Tuple[int, str] = (0, ""),
          mode: Literal["a", "b"] = "a", maybe: Optional[int] = None, either: Union[int, str] = 0,
          options: Optional[Options] = None, box: Optional[Box] = None, speed: Speed = Speed.FAST,
          newer: "int | None" = None):
    return locals()


def fields_of(fn, data):
    with pytest.raises(InputInvalid) as caught:
        check_input(fn, data)
    assert caught.value.code == "INPUT_INVALID"
    assert isinstance(caught.value, InputValidationError)
    return {f["field"]: (f["expected"], f["got"]) for f in caught.value.fields}


def test_good_input_is_converted_where_json_has_no_form_of_its_own():
    kwargs = check_input(typed, {
        "size_bytes": 2048.0, "ratio": 2, "tags": ["x"], "counts": {"a": 1}, "pair": [1, "one"], "mode": "b",
        "maybe": None, "either": "s", "options": {"depth": 2, "label": "l"}, "box": {"width": 3},
        "speed": "slow", "newer": 4,
    })
    assert kwargs["size_bytes"] == 2048 and type(kwargs["size_bytes"]) is int
    assert kwargs["ratio"] == 2.0 and type(kwargs["ratio"]) is float
    assert kwargs["pair"] == (1, "one")
    assert kwargs["box"] == Box(width=3.0, height=1.0)
    assert kwargs["speed"] is Speed.SLOW
    assert kwargs["options"] == {"depth": 2, "label": "l"}
    assert check_input(typed, {}) == {}  # defaults are the function's own


def test_every_bad_field_is_listed_with_its_expected_type_and_what_came():
    found = fields_of(typed, {
        "size_bytes": "notanint", "ratio": "x", "name": 3, "on": 1, "tags": ["ok", 2], "counts": {"a": "1"},
        "pair": [1], "mode": "c", "maybe": "no", "either": [], "options": {"depth": "deep", "extra": 1},
        "box": {"height": 2}, "speed": "medium", "newer": "x", "colour": "red",
    })
    assert found["size_bytes"] == ("int", '"notanint" (string)')
    assert found["ratio"] == ("float", '"x" (string)')
    assert found["name"] == ("str", "3 (integer)")
    assert found["on"] == ("bool", "1 (integer)")
    assert found["tags[1]"] == ("str", "2 (integer)")
    assert found["counts.a"] == ("int", '"1" (string)')
    assert found["pair"][0] == "tuple[int, str]"
    assert found["mode"] == ("'a' | 'b'", '"c" (string)')
    assert found["maybe"] == ("int", '"no" (string)')
    assert found["either"] == ("int | str", "[] (array)")
    assert found["options.depth"] == ("int", '"deep" (string)')
    assert found["options.extra"][0].startswith("no such field (Options has depth, label)")
    assert found["options.label"] == ("str (required)", "nothing")
    assert found["box.width"] == ("float (required)", "nothing")
    assert found["speed"] == ("'fast' | 'slow'", '"medium" (string)')
    assert found["newer"] == ("int", '"x" (string)')
    assert found["colour"][0].startswith("no such field (typed() takes ")
    assert len(found) == 17


def test_the_message_names_the_code_and_one_line_per_field():
    with pytest.raises(InputInvalid) as caught:
        check_input(typed, {"size_bytes": "notanint", "colour": "red"})
    lines = str(caught.value).splitlines()
    assert lines[0] == "INPUT_INVALID: the input of typed() does not match its signature (2 fields):"
    assert lines[1].startswith('  colour: unknown field (typed() takes ') and lines[1].endswith('got "red" (string)')
    assert lines[2] == '  size_bytes: expected int, got "notanint" (string)'


def test_missing_required_and_keyword_only_and_kwargs():
    def need(prompt: str, *, steps: int, **extra):
        return prompt

    found = fields_of(need, {})
    assert found == {"prompt": ("str (required)", "nothing"), "steps": ("int (required)", "nothing")}
    assert check_input(need, {"prompt": "p", "steps": 1, "other": object}) == {"prompt": "p", "steps": 1, "other": object}


def test_unannotated_functions_get_only_the_name_checks():
    def plain(a, b=2):
        return a

    assert check_input(plain, {"a": "anything"}) == {"a": "anything"}
    assert set(fields_of(plain, {"c": 1})) == {"a", "c"}


def test_an_unknown_class_or_an_unresolvable_annotation_puts_no_constraint():
    class Image:
        pass

    def odd(picture: Image, later: "NotDefinedAnywhere" = None):  # noqa: F821
        return picture

    assert check_input(odd, {"picture": "data:...", "later": 3}) == {"picture": "data:...", "later": 3}


def test_input_that_is_not_an_object():
    with pytest.raises(InputValidationError, match="must be a JSON object"):
        check_input(typed, [1, 2])
