"""Module-level facts (constants, svc aliases) and the static evaluation of decorator arguments:
literals, tuples/lists/dicts of literals, unary minus, module-level constants assigned once, and
`GpuGroup.X` / `svc.GpuGroup.X`."""
import ast
import re

from .schema import ENDPOINT_PARAMS, OPTION_PARAMS, SVC_MODULES
from .source import Problem

# Source lines as ast.get_source_segment splits them: only \r\n, \r and \n end a line.
SOURCE_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


class NotStatic(Exception):
    def __init__(self, node):
        super().__init__("not static")
        self.node = node


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
