"""What an endpoint function reports about itself: async or generator, its parameters, its return
annotation, and the TypedDicts, dataclasses and Enums its annotations name."""
import ast
import re

from .static_eval import NotStatic

PARAM_KINDS = (
    ("posonlyargs", "positional_only"), ("args", "positional_or_keyword"), ("kwonlyargs", "keyword_only"),
)


def is_generator(function):
    """True when the function's own body yields (nested functions, lambdas and classes do not count)."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def annotation_text(module, node):
    """An annotation as written; a string annotation ("list[str]") is unquoted."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return " ".join(node.value.split())
    return module.segment(node)


def parameters(module, function):
    """The function's parameters in order: name, kind, annotation, default (static) or defaultSource."""
    args = function.args
    positional = args.posonlyargs + args.args
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    params = []
    for field, kind in PARAM_KINDS:
        for arg in getattr(args, field):
            param = {"name": arg.arg, "kind": kind, "required": arg.arg not in defaults}
            annotation = annotation_text(module, arg.annotation)
            if annotation:
                param["annotation"] = annotation
            if arg.arg in defaults:
                try:
                    param["default"] = module.evaluate(defaults[arg.arg])
                except NotStatic:
                    param["defaultSource"] = module.segment(defaults[arg.arg])
            params.append(param)
        if field == "args" and args.vararg is not None:
            params.append(dict({"name": args.vararg.arg, "kind": "var_positional", "required": False},
                               **({"annotation": annotation_text(module, args.vararg.annotation)} if args.vararg.annotation else {})))
    if args.kwarg is not None:
        params.append(dict({"name": args.kwarg.arg, "kind": "var_keyword", "required": False},
                           **({"annotation": annotation_text(module, args.kwarg.annotation)} if args.kwarg.annotation else {})))
    return params


def simple_name(node):
    """`TypedDict` of `TypedDict` and `typing.TypedDict`; None for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


REQUIRED_WRAPPER = re.compile(r"^(?:typing(?:_extensions)?\.)?(NotRequired|Required)\[(.*)\]$", re.S)


def type_definitions(module, tree):
    """Module-level TypedDicts, dataclasses and Enums by name: the object or values a parameter
    annotated with one takes (its JSON schema in /docs and svc client; the runtime checks the same)."""
    found = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.ClassDef):
            continue
        bases = [simple_name(b) for b in stmt.bases]
        decorators = [simple_name(d) for d in stmt.decorator_list]
        annotated = [item for item in stmt.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)]
        if "TypedDict" in bases:
            total = not any(k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False for k in stmt.keywords)
            fields = []
            for item in annotated:
                text = annotation_text(module, item.annotation)
                wrapped = REQUIRED_WRAPPER.match(text)
                fields.append({"name": item.target.id, "annotation": wrapped.group(2) if wrapped else text,
                               "required": (wrapped.group(1) == "Required") if wrapped else total})
            found[stmt.name] = {"kind": "TypedDict", "fields": fields}
        elif "dataclass" in decorators:
            fields = []
            for item in annotated:
                text = annotation_text(module, item.annotation)
                if text.split("[")[0].split(".")[-1] in ("ClassVar", "InitVar"):
                    continue
                field_call = isinstance(item.value, ast.Call) and simple_name(item.value) == "field"
                has_default = item.value is not None and not (
                    field_call and not any(k.arg in ("default", "default_factory") for k in item.value.keywords))
                fields.append({"name": item.target.id, "annotation": text, "required": not has_default})
            found[stmt.name] = {"kind": "dataclass", "fields": fields}
        elif any(b in ("Enum", "StrEnum", "IntEnum") for b in bases):
            values = [item.value.value for item in stmt.body
                      if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant)
                      and isinstance(item.value.value, (str, int, float)) and not isinstance(item.value.value, bool)]
            found[stmt.name] = {"kind": "Enum", "values": values}
    return found


def annotation_names(text):
    """Every name an annotation's text mentions (`Optional[Box]` → Optional, Box)."""
    try:
        return {node.id for node in ast.walk(ast.parse(text, mode="eval")) if isinstance(node, ast.Name)}
    except SyntaxError:
        return set()


def referenced_types(params, definitions):
    """The definitions the parameters' annotations reach, fields of fields included."""
    wanted, queue = {}, [p["annotation"] for p in params if p.get("annotation")]
    while queue:
        for name in annotation_names(queue.pop()):
            if name in definitions and name not in wanted:
                wanted[name] = definitions[name]
                queue.extend(f["annotation"] for f in definitions[name].get("fields", []))
    return wanted


def function_facts(module, function, definitions=None):
    """Name, line, async/generator, parameters (and the types they name) and return annotation of an endpoint function."""
    facts = {
        "name": function.name,
        "line": function.lineno,
        "isAsync": isinstance(function, ast.AsyncFunctionDef),
        "isGenerator": is_generator(function),
        "params": parameters(module, function),
    }
    types = referenced_types(facts["params"], definitions or {})
    if types:
        facts["types"] = types
    returns = annotation_text(module, function.returns)
    if returns:
        facts["returns"] = returns
    return facts
