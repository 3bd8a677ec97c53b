"""Whether a file is a stock hosted-SDK worker: it calls `runpod.serverless.start({...})` when run.

Read with the interpreter's own `ast`, never by running the file. Module level counts, and so does the
body of `if __name__ == "__main__":` (how most such workers are written). The names the SDK can be
reached by are followed through the file's imports: `import runpod`, `import runpod as rp`,
`from runpod import serverless`, `from runpod.serverless import start`.
"""
import ast
import base64

from .signatures import is_generator
from .source import Problem, decode_source

SDK = "runpod"


def _sdk_names(tree):
    """Name → the dotted path it stands for under the SDK (`rp` → "runpod", `start` → "runpod.serverless.start")."""
    names = {}
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == SDK or alias.name.startswith(SDK + "."):
                    if alias.asname:
                        names[alias.asname] = alias.name
                    else:
                        names[SDK] = SDK
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module and (stmt.module == SDK or stmt.module.startswith(SDK + ".")):
            for alias in stmt.names:
                names[alias.asname or alias.name] = "%s.%s" % (stmt.module, alias.name)
    return names


def _dotted(node, names):
    """`rp.serverless.start` → "runpod.serverless.start" when `rp` is the SDK; None otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in names:
        return None
    return ".".join([names[node.id]] + list(reversed(parts)))


def _is_main_guard(stmt):
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def _run_statements(tree):
    """The statements that run when the file runs as a script: module level and the `__main__` guard."""
    for stmt in tree.body:
        if _is_main_guard(stmt):
            yield from stmt.body
        else:
            yield stmt


def _functions(tree):
    return {stmt.name: stmt for stmt in tree.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _config_of(call, functions):
    """What the start call's config dict says, as far as it is written literally."""
    config = {"line": call.lineno}
    arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "config"), None)
    if not isinstance(arg, ast.Dict):
        return config
    for key, value in zip(arg.keys, arg.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        if isinstance(value, ast.Name):
            config[key.value] = value.id
            fn = functions.get(value.id)
            if key.value == "handler" and fn is not None:
                config["handlerLine"] = fn.lineno
                config["isAsync"] = isinstance(fn, ast.AsyncFunctionDef)
                config["isGenerator"] = is_generator(fn)
        elif isinstance(value, ast.Constant) and isinstance(value.value, (bool, int, str)):
            config[key.value] = value.value
    return config


def find_start(item):
    """{"path", "start": {"line", "handler", ...} | None} or {"path", "error"} for one file."""
    path = item["path"]
    try:
        source = decode_source(base64.b64decode(item["source"]))
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            raise Problem("PYTHON_SYNTAX", error.lineno or 1, error.msg or "invalid syntax")
        except ValueError as error:
            raise Problem("PYTHON_SYNTAX", 1, str(error))
    except Problem as problem:
        return {"path": path, "error": problem.payload}
    names = _sdk_names(tree)
    if not names:
        return {"path": path, "start": None}
    functions = _functions(tree)
    for stmt in _run_statements(tree):
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and _dotted(call.func, names) == "runpod.serverless.start":
            return {"path": path, "start": _config_of(call, functions)}
    return {"path": path, "start": None}
