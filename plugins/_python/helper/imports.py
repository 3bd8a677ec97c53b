"""The imports that run when a module is imported, and the names of the interpreter's standard library."""
import ast
import sys

IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")


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


def stdlib_modules():
    """Top-level module names of this interpreter's standard library."""
    names = getattr(sys, "stdlib_module_names", None)  # Python 3.10+
    if names is None:
        import pkgutil
        import sysconfig
        names = set(sys.builtin_module_names)
        names.update(m.name for m in pkgutil.iter_modules([sysconfig.get_paths()["stdlib"]]))
    return sorted(names)
