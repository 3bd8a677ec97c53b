"""The Endpoint argument names and route methods, from the SDK's own _schema.py (generated from
core/endpoint-schema.ts), so discovery and the runtime read Endpoint(...) alike."""
import importlib.util
import os


def _endpoint_schema():
    """The SDK's _schema.py (stdlib only), loaded by path from this package
    (plugins/_python/helper/ and runtime/python/svc/ ship side by side)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "runtime", "python", "svc", "_schema.py")
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
