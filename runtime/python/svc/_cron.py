"""The cron grammar of `schedule=`, checked at decoration time with the build's messages
(core/cron.ts; test/core/endpoint-schema.test.ts compares them). Only the grammar: which times an
expression names is the platform's business, and an expression that never matches a date
(`0 0 30 2 *`) is left to `svc build`."""
from typing import Optional, Sequence, Tuple

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# (name, min, max, names)
FIELDS: Tuple[Tuple[str, int, int, Sequence[str]], ...] = (
    ("second", 0, 59, ()), ("minute", 0, 59, ()), ("hour", 0, 23, ()), ("day-of-month", 1, 31, ()),
    ("month", 1, 12, MONTHS), ("day-of-week", 0, 7, WEEKDAYS))
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


class CronProblem(ValueError):
    pass


def _value(text: str, field: Tuple[str, int, int, Sequence[str]]) -> int:
    name, low, high, names = field
    if text.upper() in names:
        return names.index(text.upper()) + low
    if not text.isdigit():
        hint = f" or a name ({', '.join(names[:3])}, ...)" if names else ""
        raise CronProblem(f'{name} field: "{text}" is not a number{hint}')
    if not low <= int(text) <= high:
        raise CronProblem(f"{name} field: {int(text)} is out of range {low}-{high}")
    return int(text)


def _field(text: str, field: Tuple[str, int, int, Sequence[str]]) -> None:
    name = field[0]
    for part in text.split(","):
        pieces = part.split("/")
        if len(pieces) > 2 or pieces[0] == "":
            raise CronProblem(f'{name} field: "{part}" is not a value, range or step')
        if len(pieces) == 2 and (not pieces[1].isdigit() or int(pieces[1]) < 1):
            raise CronProblem(f'{name} field: step "{pieces[1]}" must be a whole number of 1 or more')
        span = pieces[0]
        if span == "*":
            continue
        if "-" in span:
            ends = span.split("-")
            if len(ends) != 2 or not all(ends):
                raise CronProblem(f'{name} field: "{span}" is not a range (a-b)')
            if _value(ends[0], field) > _value(ends[1], field):
                raise CronProblem(f"{name} field: range {span} runs backwards")
        else:
            _value(span, field)


def cron_problem(expression: str) -> Optional[str]:
    """What is wrong with the expression's grammar, in core/cron.ts's words; None when nothing is."""
    source = expression.strip()
    try:
        if not source:
            raise CronProblem("the expression is empty")
        if source.startswith("@"):
            if source.lower() not in MACROS:
                raise CronProblem(f'unknown shorthand "{source}" ({", ".join(MACROS)})')
            return None
        parts = source.split()
        if len(parts) not in (5, 6):
            raise CronProblem(f"it has {len(parts)} field(s); give 5 (minute hour day-of-month month day-of-week) "
                              "or 6 (a seconds field first)")
        for text, field in zip(parts if len(parts) == 6 else ["0"] + parts, FIELDS):
            _field(text, field)
    except CronProblem as problem:
        return str(problem)
    return None
