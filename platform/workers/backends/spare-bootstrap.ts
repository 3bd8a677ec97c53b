/**
 * What a warm spare's interpreter runs (./warm-spares.ts): it imports the image's standard-library
 * modules the svc runtime imports anyway (nothing of any build: its /app is still empty) and, when
 * argv[1] names the platform's compiled copy of the runtime (./runtime-bytecode.ts), `svc.worker`
 * from there (~20 ms of a claimed spare's start, issue 42; the runtime reads its environment when it
 * is first used, not at import). Then it waits on stdin for one line, `{"handler": ..., "env":
 * {...}, "runtime": bool}`, written once its build is in /app: `runtime` false (the build's svc/ is
 * not that copy byte for byte) drops every svc module imported ahead, so the build's own are
 * imported. Then it becomes what `python -s handlers/<endpoint>.py` would be: that environment,
 * stdin on /dev/null, argv and sys.path[0] as the script's, the handler run as `__main__`. The end
 * of stdin without a line (the platform let it go) ends it.
 */

/**
 * The standard library's modules importing the svc runtime loads (measured: `import svc.worker` under
 * `python -s`, sys.modules before and after, the top-level names; the rest come with these), and
 * those it imports at their first use (asyncio at the first coroutine, http.client, ssl and urllib
 * for HTTPS or a proxy, zoneinfo, mimetypes: runtime/python/tests/test_start_imports.py): a cold
 * worker's start skips them, a spare has the idle time to take them before its claim.
 */
export const PRELOADED_MODULES = [
  "asyncio",
  "base64",
  "calendar",
  "concurrent.futures",
  "contextvars",
  "copy",
  "dataclasses",
  "datetime",
  "dis",
  "email.parser",
  "email.utils",
  "hashlib",
  "heapq",
  "http.client",
  "inspect",
  "json",
  "logging",
  "mimetypes",
  "queue",
  "runpy",
  "selectors",
  "signal",
  "socket",
  "ssl",
  "subprocess",
  "textwrap",
  "tokenize",
  "traceback",
  "urllib.error",
  "urllib.request",
  "zoneinfo",
];

export const SPARE_BOOTSTRAP = [
  "import importlib, json, os, sys",
  "def wait_for_build():",
  "    runtime = sys.argv[1] if len(sys.argv) > 1 else ''",
  `    app = [p for p in sys.path if p == "/app" or p.startswith("/app/")]`,
  "    search = sys.path[:]",
  "    sys.path[:] = [p for p in search if p and p not in app]",
  `    for name in ${JSON.stringify(PRELOADED_MODULES)}:`,
  "        try:",
  "            importlib.import_module(name)",
  "        except Exception:",
  "            pass",
  "    if runtime:",
  "        sys.path.insert(0, runtime)",
  "        try:",
  "            importlib.import_module('svc.worker')",
  "        except Exception:",
  "            runtime = ''",
  "    sys.path[:] = search",
  "    line = b''",
  "    while not line.endswith(b'\\n'):",
  "        chunk = os.read(0, 1 << 16)",
  "        if not chunk:",
  "            sys.exit(0)",
  "        line += chunk",
  "    go = json.loads(line)",
  "    if not (runtime and go.get('runtime')):",
  "        for name in [n for n in sys.modules if n == 'svc' or n.startswith('svc.')]:",
  "            del sys.modules[name]",
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
