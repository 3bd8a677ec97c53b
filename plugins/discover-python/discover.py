"""svc discovery helper: finds @Endpoint(...) functions with Python's own parser.

Stdlib only. It never imports or runs the user's code: it parses each file with `ast` and
evaluates decorator arguments statically (literals, tuples/lists/dicts of literals, unary minus,
module-level constants assigned once, and `GpuGroup.X` / `svc.GpuGroup.X`).

Protocol (JSON, UTF-8):
  request  {"files": [{"path": "a/b.py", "source": "<base64 of the file's bytes>"}]}
  response {"results": [{"path": ..., "functions": [...], "endpoints": [...], "imports": [...]} |
                        {"path": ..., "error": {"code", "line", "message", ...}}]}
  Each function carries its parameters ("params": name, kind, annotation, default or
  defaultSource, required) and "returns" (the return annotation as written). "imports" lists the
  imports that run when the module is imported (module level, not under `if TYPE_CHECKING:` nor in
  a `try:` that catches ImportError): {"module", "names", "level", "line"}.

Every response names the interpreter that answered it, "executable": sys.executable (the real one
behind a pyenv shim). A request with "stdlib": true is also answered "stdlib": {"version": "3.11", "modules": [...]}, the
interpreter's standard library (sys.stdlib_module_names). A request with "requirements": [lines] is
also answered "requirements": [parsed or null], each line read by pip's vendored `packaging`.

One-shot mode (default): one request on stdin, one response on stdout.
Long-lived mode (`--serve`): one request per line on stdin, one response per line on stdout,
until stdin closes. A request that cannot be read answers {"fatal": "<message>"}.
"""
import ast
import base64
import importlib.util
import io
import json
import os
import re
import sys
import tokenize
import unicodedata



def _endpoint_schema():
    """The SDK's _schema.py (generated from core/endpoint-schema.ts, stdlib only), loaded by path
    from this package (plugins/discover-python/ and runtime/python/svc/ ship side by side)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runtime", "python", "svc", "_schema.py")
    spec = importlib.util.spec_from_file_location("svc_endpoint_schema", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SCHEMA = _endpoint_schema()
ROUTE_METHODS = tuple(method.lower() for method in _SCHEMA.HTTP_METHODS)
# Positional parameters of Endpoint(...), in order (docs/contracts.md section 3).
ENDPOINT_PARAMS = _SCHEMA.ENDPOINT_ARGUMENTS
SVC_MODULES = ("svc", "svc.gpu", "svc.endpoint", "svc.options")
# svc.Cron, svc.Batch and svc.Retries: Endpoint(schedule=Cron(...), batch=Batch(...), retries=Retries(...))
# read as dicts of these parameters
OPTION_PARAMS = {"Cron": ("cron", "timezone", "input"), "Batch": ("max_size", "max_wait_ms"),
                 "Retries": ("max_retries", "backoff", "initial_delay")}
# Source lines as ast.get_source_segment splits them: only \r\n, \r and \n end a line.
SOURCE_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


class Problem(Exception):
    """A user error in one file, reported back with a code the TypeScript side maps to the catalogue."""

    def __init__(self, code, line, message, **extra):
        super().__init__(message)
        self.payload = dict(code=code, line=line, message=message, **extra)


class NotStatic(Exception):
    def __init__(self, node):
        super().__init__("not static")
        self.node = node


def decode_source(data):
    """Bytes → text the way Python reads a source file (BOM and coding cookie honoured)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        raise Problem("PYTHON_SYNTAX", 1, "cannot decode the file: %s" % error)


class Module:
    """Module-level facts: constants, svc aliases, Endpoint objects."""

    def __init__(self, tree, source):
        self.source = source
        self.lines = None  # SOURCE_LINE split of source, made on the first segment()
        self.bindings = {}  # name -> number of module-level bindings
        self.values = {}  # name -> value node of its single plain assignment
        self.endpoint_names = {"Endpoint"}  # names that refer to svc.Endpoint
        self.gpu_group_names = {"GpuGroup"}  # names that refer to svc.GpuGroup
        self.option_names = {name: name for name in OPTION_PARAMS}  # local name -> svc.Cron / svc.Batch
        self.svc_modules = {"svc"}  # names that refer to the svc package
        for stmt in tree.body:
            self._scan(stmt)

    def _bind(self, name, value=None):
        self.bindings[name] = self.bindings.get(name, 0) + 1
        if value is not None:
            self.values[name] = value

    def _bind_target(self, target, value):
        if isinstance(target, ast.Name):
            self._bind(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(element, None)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, None)

    def _scan(self, stmt):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self._bind_target(target, stmt.value if len(stmt.targets) == 1 else None)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._bind_target(stmt.target, stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            self._bind_target(stmt.target, None)
            self._bind_target(stmt.target, None)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._bind(stmt.name)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                self._bind(bound)
                if alias.name == "svc" and alias.asname:
                    self.svc_modules.add(alias.asname)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                bound = alias.asname or alias.name
                self._bind(bound)
                if stmt.level == 0 and stmt.module in SVC_MODULES:
                    if alias.name == "Endpoint":
                        self.endpoint_names.add(bound)
                    elif alias.name == "GpuGroup":
                        self.gpu_group_names.add(bound)
                    elif alias.name in OPTION_PARAMS:
                        self.option_names[bound] = alias.name
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._bind_target(stmt.target, None)
            for inner in stmt.body + stmt.orelse:
                self._scan(inner)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, None)
            for inner in stmt.body:
                self._scan(inner)
        elif isinstance(stmt, ast.If):
            # A name bound in a branch is not a constant: count it twice.
            for inner in stmt.body + stmt.orelse:
                self._scan_conditional(inner)
        elif isinstance(stmt, ast.Try):
            for inner in stmt.body + stmt.orelse + stmt.finalbody:
                self._scan_conditional(inner)
            for handler in stmt.handlers:
                if handler.name:
                    self._bind(handler.name)
                for inner in handler.body:
                    self._scan_conditional(inner)
        elif isinstance(stmt, ast.While):
            for inner in stmt.body + stmt.orelse:
                self._scan_conditional(inner)

    def _scan_conditional(self, stmt):
        before = dict(self.bindings)
        self._scan(stmt)
        for name, count in self.bindings.items():
            if count != before.get(name, 0):
                self.bindings[name] = count + 1

    # -- names -----------------------------------------------------------------------------------

    def is_svc_module(self, node):
        return isinstance(node, ast.Name) and node.id in self.svc_modules

    def is_endpoint_ref(self, node):
        if isinstance(node, ast.Name):
            return node.id in self.endpoint_names
        return isinstance(node, ast.Attribute) and node.attr == "Endpoint" and self.is_svc_module(node.value)

    def is_gpu_group_ref(self, node):
        if isinstance(node, ast.Name):
            return node.id in self.gpu_group_names
        return isinstance(node, ast.Attribute) and node.attr == "GpuGroup" and self.is_svc_module(node.value)

    def option_class(self, node):
        """'Cron', 'Batch' or 'Retries' when `node` names svc.Cron / svc.Batch / svc.Retries, else None."""
        if isinstance(node, ast.Name):
            return self.option_names.get(node.id)
        if isinstance(node, ast.Attribute) and node.attr in OPTION_PARAMS and self.is_svc_module(node.value):
            return node.attr
        return None

    def is_endpoint_call(self, node):
        return isinstance(node, ast.Call) and self.is_endpoint_ref(node.func)

    # -- static evaluation ------------------------------------------------------------------------

    def evaluate(self, node, seen=()):
        if isinstance(node, ast.Constant):
            value = node.value
            if value is None or isinstance(value, (bool, int, float, str)):
                if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
                    raise NotStatic(node)
                return value
            raise NotStatic(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return [self.evaluate(element, seen) for element in node.elts]
        if isinstance(node, ast.Dict):
            result = {}
            for key, value in zip(node.keys, node.values):
                if key is None:  # {**other}
                    raise NotStatic(value)
                evaluated_key = self.evaluate(key, seen)
                if not isinstance(evaluated_key, str):
                    raise NotStatic(key)
                result[evaluated_key] = self.evaluate(value, seen)
            return result
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.evaluate(node.operand, seen)
            if isinstance(operand, bool) or not isinstance(operand, (int, float)):
                raise NotStatic(node)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Attribute) and self.is_gpu_group_ref(node.value):
            return node.attr
        if isinstance(node, ast.Call) and self.option_class(node.func):
            # Cron("0 3 * * *", timezone=...) / Batch(16, 50): a dict of the arguments given, by name
            # (the Endpoint schema, core/endpoint-schema.ts, checks them and fills the defaults)
            params = OPTION_PARAMS[self.option_class(node.func)]
            if len(node.args) > len(params) or any(k.arg is None for k in node.keywords):
                raise NotStatic(node)
            result = {params[i]: self.evaluate(arg, seen) for i, arg in enumerate(node.args)}
            for keyword in node.keywords:
                result[keyword.arg] = self.evaluate(keyword.value, seen)
            return result
        if isinstance(node, ast.Name):
            name = node.id
            if name in seen or self.bindings.get(name) != 1 or name not in self.values:
                raise NotStatic(node)
            try:
                return self.evaluate(self.values[name], seen + (name,))
            except NotStatic:
                raise NotStatic(node)
        raise NotStatic(node)

    def source_segment(self, node):
        """ast.get_source_segment(self.source, node), splitting the source once per file, not once per call."""
        end_lineno, end_col_offset = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col_offset is None:
            return None
        if self.lines is None:
            self.lines = SOURCE_LINE.findall(self.source)
        first, last = node.lineno - 1, end_lineno - 1
        if first == last:
            return self.lines[first].encode()[node.col_offset:end_col_offset].decode()
        return "".join([self.lines[first].encode()[node.col_offset:].decode()] + self.lines[first + 1:last]
                       + [self.lines[last].encode()[:end_col_offset].decode()])

    def segment(self, node):
        try:
            text = self.source_segment(node)
        except Exception:  # a node whose offsets do not fall on the source's characters
            text = None
        if not text:
            text = type(node).__name__
        text = " ".join(text.split())
        return text if len(text) <= 120 else text[:117] + "..."

    def static(self, node, argument):
        try:
            return self.evaluate(node)
        except NotStatic as error:
            raise Problem(
                "NON_STATIC_ARGUMENT", getattr(error.node, "lineno", node.lineno),
                "argument %s is not static" % argument, argument=argument, source=self.segment(error.node),
            )

    def endpoint_args(self, call):
        """Keyword arguments of an Endpoint(...) call, positionals mapped to their parameter names."""
        args = {}
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                raise Problem("NON_STATIC_ARGUMENT", arg.lineno, "*args", argument="*args", source=self.segment(arg))
            if index >= len(ENDPOINT_PARAMS):
                raise Problem("ENDPOINT_ARGUMENT_INVALID", arg.lineno,
                              "Endpoint(...) takes at most %d positional arguments" % len(ENDPOINT_PARAMS))
            args[ENDPOINT_PARAMS[index]] = self.static(arg, ENDPOINT_PARAMS[index])
        for keyword in call.keywords:
            if keyword.arg is None:
                raise Problem("NON_STATIC_ARGUMENT", keyword.value.lineno, "**kwargs",
                              argument="**", source="**" + self.segment(keyword.value))
            if keyword.arg in args:
                raise Problem("ENDPOINT_ARGUMENT_INVALID", keyword.value.lineno,
                              "argument %s is given twice" % keyword.arg)
            args[keyword.arg] = self.static(keyword.value, keyword.arg)
        return args


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


PARAM_KINDS = (
    ("posonlyargs", "positional_only"), ("args", "positional_or_keyword"), ("kwonlyargs", "keyword_only"),
)
IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")


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


def is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def catches_import_error(handlers):
    for handler in handlers:
        if handler.type is None:
            return True
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        for node in types:
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if name in IMPORT_ERRORS:
                return True
    return False


def module_imports(body, found=None):
    """Imports that run when the module is imported: module level, branches, loops and with-blocks;
    not function or class bodies, `if TYPE_CHECKING:` or a `try:` that handles a failed import."""
    found = [] if found is None else found
    for stmt in body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                found.append({"module": alias.name, "names": [], "level": 0, "line": stmt.lineno})
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.module != "__future__":
                found.append({"module": stmt.module or "", "names": [a.name for a in stmt.names],
                              "level": stmt.level, "line": stmt.lineno})
        elif isinstance(stmt, ast.If):
            if not is_type_checking(stmt.test):
                module_imports(stmt.body, found)
            module_imports(stmt.orelse, found)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            if not catches_import_error(stmt.handlers):
                module_imports(stmt.body, found)
            for handler in stmt.handlers:
                module_imports(handler.body, found)
            module_imports(stmt.orelse + stmt.finalbody, found)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            module_imports(stmt.body + getattr(stmt, "orelse", []), found)
    return found


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


def stdlib_modules():
    """Top-level module names of this interpreter's standard library."""
    names = getattr(sys, "stdlib_module_names", None)  # Python 3.10+
    if names is None:
        import pkgutil
        import sysconfig
        names = set(sys.builtin_module_names)
        names.update(m.name for m in pkgutil.iter_modules([sysconfig.get_paths()["stdlib"]]))
    return sorted(names)


def parse_requirement(line):
    """One requirement line (no pip options or comments) as pip reads it, by pip's own vendored
    `packaging`: {"name" (PEP 503), "written" (as written), "extras", "specifiers", "marker"?, "url"?},
    extras and specifiers in the order written. A bare wheel or sdist URL or path is named from its
    file name (or `#egg=`); None when the line names no project."""
    try:
        from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
        from pip._vendor.packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
    except ImportError:
        raise RuntimeError("pip is not installed for %s (svc reads requirements with pip's packaging and installs them with pip): "
                           "python3 -m ensurepip, or apt-get install python3-pip" % sys.executable)

    try:
        req = Requirement(line)
    except InvalidRequirement:
        return bare_url_requirement(line, canonicalize_name, parse_wheel_filename, parse_sdist_filename)
    compact = re.sub(r"\s+", "", line)
    position = lambda text: compact.find(text) if text in compact else len(compact)
    result = {
        "name": canonicalize_name(req.name),
        "written": req.name,
        "extras": sorted(req.extras, key=position),
        "specifiers": sorted((spec.operator + spec.version for spec in req.specifier), key=position),
    }
    if req.marker is not None:
        result["marker"] = str(req.marker)
    if req.url:
        result["url"] = req.url
    return result


def bare_url_requirement(line, canonicalize_name, parse_wheel_filename, parse_sdist_filename):
    """`https://…/pkg-1.0-py3-none-any.whl`, `./dist/pkg-1.0.tar.gz`, `git+https://…#egg=pkg`."""
    text, _, marker = line.partition(" ;") if "://" in line else line.partition(";")
    text = text.strip()
    egg = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", text)
    name = egg.group(1) if egg else None
    if name is None:
        filename = text.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        try:
            name = parse_wheel_filename(filename)[0] if filename.endswith(".whl") else parse_sdist_filename(filename)[0]
        except Exception:  # packaging's InvalidWheelFilename / InvalidSdistFilename: no project named
            return None
    result = {"name": canonicalize_name(name), "written": canonicalize_name(name), "extras": [], "specifiers": [], "url": text}
    if marker.strip():
        result["marker"] = marker.strip()
    return result


def handle(request):
    response = {"results": [handle_file(item) for item in request.get("files", [])], "executable": sys.executable}
    if request.get("stdlib"):
        response["stdlib"] = {"version": "%d.%d" % sys.version_info[:2], "modules": stdlib_modules()}
    if "requirements" in request:
        response["requirements"] = [parse_requirement(line) for line in request["requirements"]]
    return response


def main(argv):
    if "--serve" in argv:
        for raw in sys.stdin.buffer:
            if not raw.strip():
                continue
            try:
                response = handle(json.loads(raw.decode("utf-8")))
            except Exception as error:  # keep serving: one bad request must not kill the dev server's helper
                response = {"fatal": "%s: %s" % (type(error).__name__, error)}
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()
        return 0
    try:
        response = handle(json.loads(sys.stdin.buffer.read().decode("utf-8")))
    except Exception as error:
        response = {"fatal": "%s: %s" % (type(error).__name__, error)}
    sys.stdout.write(json.dumps(response) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
