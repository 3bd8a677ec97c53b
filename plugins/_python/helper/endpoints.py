"""The @Endpoint(...) functions, routes and Endpoint objects of one file."""
import ast
import base64
import unicodedata

from .imports import module_imports
from .schema import ROUTE_METHODS
from .signatures import function_facts, type_definitions
from .source import Problem, decode_source
from .static_eval import Module

def route_of(module, decorator, endpoints):
    """`@api.post("/x")` → (variable, method, path, line) when `api` is a module-level Endpoint object."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)):
        return None
    target = decorator.func.value
    method = decorator.func.attr
    if not (isinstance(target, ast.Name) and target.id in endpoints and method in ROUTE_METHODS):
        return None
    path_node = decorator.args[0] if decorator.args else None
    for keyword in decorator.keywords:
        if keyword.arg == "path" and path_node is None:
            path_node = keyword.value
        else:
            raise Problem("ENDPOINT_ARGUMENT_INVALID", decorator.lineno,
                          "%s.%s(...) takes one argument, the route path" % (target.id, method))
    if path_node is None or len(decorator.args) > 1:
        raise Problem("ENDPOINT_ARGUMENT_INVALID", decorator.lineno,
                      "%s.%s(...) takes one argument, the route path" % (target.id, method))
    path = module.static(path_node, "path")
    if not isinstance(path, str):
        raise Problem("ENDPOINT_ARGUMENT_INVALID", decorator.lineno,
                      "the route path of %s.%s(...) must be a string" % (target.id, method))
    return target.id, method.upper(), path, decorator.lineno


def mentions_endpoint(source):
    """Whether the name Endpoint can occur in the source (identifiers are NFKC-normalized: ｅ is e)."""
    return "Endpoint" in source or (not source.isascii() and "Endpoint" in unicodedata.normalize("NFKC", source))


def analyse(source):
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise Problem("PYTHON_SYNTAX", error.lineno or 1, error.msg or "invalid syntax")
    except ValueError as error:  # source with NUL bytes
        raise Problem("PYTHON_SYNTAX", 1, str(error))
    module = Module(tree, source)

    # Load-balanced endpoint objects: `api = Endpoint(...)` at module level.
    endpoints = {}
    for stmt in tree.body:
        target, value = None, None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name) and module.is_endpoint_call(value):
            endpoints[target.id] = {"variable": target.id, "line": stmt.lineno, "args": module.endpoint_args(value)}

    functions = []
    definitions = []  # module-level TypedDicts, dataclasses, Enums: read once, when the file has an endpoint

    def facts_of(function):
        if not definitions:
            definitions.append(type_definitions(module, tree))
        return function_facts(module, function, definitions[0])

    for stmt in tree.body:
        # An undecorated function is no endpoint: none of the per-function work below.
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or not stmt.decorator_list:
            continue
        base = None  # what an endpoint function reports about itself, made once it is one
        for decorator in stmt.decorator_list:
            if module.is_endpoint_call(decorator):
                declaration = {"line": decorator.lineno, "args": module.endpoint_args(decorator)}
                base = base or facts_of(stmt)
                functions.append(dict(base, declaration=declaration))
                continue
            if isinstance(decorator, ast.Name) and decorator.id in endpoints:
                # `worker = Endpoint(...)` then `@worker`: the queue-based form of an Endpoint object.
                base = base or facts_of(stmt)
                functions.append(dict(base, declaration=endpoints[decorator.id]))
                continue
            if module.is_endpoint_ref(decorator):
                raise Problem("ENDPOINT_ARGUMENT_INVALID", decorator.lineno,
                              "use @Endpoint(name=...) with arguments, not a bare @Endpoint")
            route = route_of(module, decorator, endpoints)
            if route:
                variable, method, path, _line = route
                declaration = endpoints[variable]
                base = base or facts_of(stmt)
                functions.append(dict(base, declaration=declaration, route={"method": method, "path": path}))
    if not endpoints and not mentions_endpoint(module.source):
        # Without an Endpoint object or the name Endpoint, no decorator below could be an endpoint.
        return {"functions": functions, "endpoints": [], "imports": module_imports(tree.body)}
    # A decorated function the worker cannot import by name (in a class, a function or a branch) is a mistake.
    top_level = set(id(stmt) for stmt in tree.body)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in top_level:
            for decorator in node.decorator_list:
                if (module.is_endpoint_call(decorator) or route_of(module, decorator, endpoints)
                        or (isinstance(decorator, ast.Name) and decorator.id in endpoints)):
                    raise Problem("ENDPOINT_ARGUMENT_INVALID", decorator.lineno,
                                  "endpoint function %s must be defined at module level" % node.name)
    return {"functions": functions, "endpoints": list(endpoints.values()), "imports": module_imports(tree.body)}


def handle_file(item):
    path = item.get("path", "?")
    try:
        data = base64.b64decode(item.get("source", ""))
        result = analyse(decode_source(data))
        result["path"] = path
        return result
    except Problem as problem:
        return {"path": path, "error": problem.payload}
    except RecursionError:
        return {"path": path, "error": {"code": "PYTHON_SYNTAX", "line": 1, "message": "the file is too deeply nested to parse"}}
