/**
 * What a warm spare's interpreter runs (./warm-spares.ts): it imports the image's standard-library
 * modules the svc runtime imports anyway (nothing of any build: its /app is still empty), then
 * waits on stdin for one line, `{"handler": ..., "env": {...}}`, written once its build is in /app.
 * Then it becomes what `python -s handlers/<endpoint>.py` would be: that environment, stdin on
 * /dev/null, argv and sys.path[0] as the script's, the handler run as `__main__`. The end of stdin
 * without a line (the platform let it go) ends it.
 */

/** The standard library's modules a worker imports before its first job (measured: a QB and an LB worker's sys.modules). */
export const PRELOADED_MODULES = [
  "json",
  "threading",
  "socket",
  "selectors",
  "http.client",
  "http.server",
  "socketserver",
  "urllib.parse",
  "urllib.request",
  "email.utils",
  "asyncio",
  "concurrent.futures",
  "queue",
  "traceback",
  "inspect",
  "typing",
  "dataclasses",
  "logging",
  "signal",
  "uuid",
  "base64",
  "hashlib",
  "random",
  "datetime",
  "contextlib",
  "runpy",
];

export const SPARE_BOOTSTRAP = [
  "import importlib, json, os, sys",
  "def wait_for_build():",
  `    app = [p for p in sys.path if p == "/app" or p.startswith("/app/")]`,
  "    search = sys.path[:]",
  "    sys.path[:] = [p for p in search if p and p not in app]",
  `    for name in ${JSON.stringify(PRELOADED_MODULES)}:`,
  "        try:",
  "            importlib.import_module(name)",
  "        except Exception:",
  "            pass",
  "    sys.path[:] = search",
  "    line = b''",
  "    while not line.endswith(b'\\n'):",
  "        chunk = os.read(0, 1 << 16)",
  "        if not chunk:",
  "            sys.exit(0)",
  "        line += chunk",
  "    go = json.loads(line)",
  "    null = os.open(os.devnull, os.O_RDONLY)",
  "    os.dup2(null, 0)",
  "    os.close(null)",
  "    os.environ.clear()",
  "    os.environ.update(go['env'])",
  "    for p in app:",
  "        sys.path_importer_cache.pop(p, None)",
  "    importlib.invalidate_caches()",
  "    sys.argv[:] = [go['handler']]",
  "    sys.path[0] = os.path.dirname(os.path.abspath(go['handler']))",
  "    return go['handler']",
  "handler = wait_for_build()",
  "import runpy",
  "runpy.run_path(handler, run_name='__main__')",
].join("\n");
