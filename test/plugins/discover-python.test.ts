import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createContext, defaultBuildOptions } from "../../core/build.ts";
import { resolveConfig } from "../../core/config.ts";
import { createLogger } from "../../core/logger.ts";
import { Pipeline } from "../../core/pipeline.ts";
import { HELPER_DIR, PythonParser, modulePath, pythonInterpreter, type FileAnalysis } from "../../plugins/_python/index.ts";
import { discoverPython, listSourceFiles } from "../../plugins/discover-python/index.ts";
import { FIXTURES, caught } from "./_front-half.ts";

const parser = new PythonParser();
afterAll(() => parser.close());

async function discover(root: string, ignore: string[] = []) {
  const config = await resolveConfig(root, { ignore });
  const logger = createLogger("silent");
  const ctx = createContext(root, config, { ...defaultBuildOptions, until: "manifest" }, logger);
  const pipeline = new Pipeline([discoverPython({ parser })]);
  await pipeline.hooks.discover.promise([], ctx).then((functions) => (ctx.functions = functions));
  return ctx;
}

const summary = (ctx: Awaited<ReturnType<typeof discover>>) =>
  ctx.functions.map((fn) => ({
    name: fn.name,
    file: fn.file,
    module: fn.module,
    line: fn.line,
    isAsync: fn.isAsync,
    isGenerator: fn.isGenerator,
    route: fn.route,
    declarationLine: fn.declaration.line,
  }));

function tempApp(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "svc-discover-"));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

const analyse = async (source: string): Promise<FileAnalysis> => (await parser.parse([{ path: "app.py", source: Buffer.from(source) }]))[0]!;

describe("svc:discover-python on fixtures", () => {
  it("finds every endpoint function of multi-endpoint, skipping ignored files and tests", async () => {
    const ctx = await discover(join(FIXTURES, "multi-endpoint"));
    expect(summary(ctx)).toEqual([
      { name: "count", file: "stream.py", module: "stream", line: 11, isAsync: false, isGenerator: true, route: undefined, declarationLine: 10 },
      { name: "resize", file: "workers/cpu.py", module: "workers.cpu", line: 6, isAsync: false, isGenerator: false, route: undefined, declarationLine: 5 },
      { name: "process", file: "workers/gpu.py", module: "workers.gpu", line: 21, isAsync: true, isGenerator: false, route: undefined, declarationLine: 11 },
    ]);
    const gpu = ctx.functions.find((fn) => fn.name === "process")!;
    expect(gpu.declaration).toEqual({
      file: "workers/gpu.py",
      line: 11,
      args: {
        name: "gpu-worker",
        gpu: ["ADA_24", "AMPERE_48"],
        gpu_count: 1,
        workers: [1, 3],
        idle_timeout: 30,
        execution_timeout: 120,
        env: { MODEL: "tiny" },
        dependencies: ["pillow>=10"],
      },
    });
  });

  it("sets ctx.sourceFiles to the app's files of every type, without ignored, test or project files", async () => {
    const ctx = await discover(join(FIXTURES, "multi-endpoint"));
    expect(ctx.sourceFiles).toEqual([
      "data/prompts.json",
      "helpers/__init__.py",
      "helpers/text.py",
      "stream.py",
      "workers/__init__.py",
      "workers/cpu.py",
      "workers/gpu.py",
    ]);
  });

  it("finds load-balanced routes with their Endpoint object", async () => {
    const ctx = await discover(join(FIXTURES, "load-balanced"));
    expect(summary(ctx)).toEqual([
      {
        name: "health",
        file: "app/api.py",
        module: "app.api",
        line: 8,
        isAsync: false,
        isGenerator: false,
        route: { method: "GET", path: "/health" },
        declarationLine: 4,
      },
      {
        name: "generate",
        file: "app/api.py",
        module: "app.api",
        line: 13,
        isAsync: true,
        isGenerator: false,
        route: { method: "POST", path: "/generate" },
        declarationLine: 4,
      },
      { name: "summarise", file: "worker.py", module: "worker", line: 6, isAsync: false, isGenerator: false, route: undefined, declarationLine: 5 },
    ]);
    expect(ctx.functions[0]!.declaration).toEqual({
      file: "app/api.py",
      line: 4,
      variable: "api",
      args: { name: "api", cpu: "cpu3c-2-4", workers: [1, 2], scaler_value: 10 },
    });
  });

  it("honours config ignore", async () => {
    const ctx = await caught(() => discover(join(FIXTURES, "load-balanced"), ["app/", "worker.py"]));
    expect(ctx.code).toBe("NO_ENDPOINTS");
  });
});

describe("file walking", () => {
  it("applies the built-in ignores, .gitignore, .svcignore and the source-file rule", async () => {
    const ep = 'from svc import Endpoint\n@Endpoint(name="x")\ndef f():\n    pass\n';
    const root = tempApp({
      "main.py": ep,
      "pkg/__init__.py": "",
      "pkg/model.py": "X = 1\n",
      "pkg/weights.bin": "bin",
      "myenv/pyvenv.cfg": "home = /usr\n",
      "myenv/lib/site.py": ep,
      ".venv/lib/a.py": ep,
      "venv/a.py": ep,
      "env/a.py": ep,
      "node_modules/x/a.py": ep,
      "pkg/__pycache__/model.cpython-311.pyc": "",
      "pkg/stale.pyc": "",
      "tests/test_a.py": ep,
      "pkg/test/helpers.py": ep,
      "test_main.py": ep,
      "main_test.py": ep,
      "dist/a.py": ep,
      "build/a.py": ep,
      ".git/config": "",
      ".svc/svc_manifest.json": "{}",
      ".platform/resources.pkl": "",
      ".env": "PLATFORM_API_KEY=secret\n",
      ".env.local": "X=1\n",
      ".gitignore": "secret.py\n",
      ".svcignore": "notebooks/\n",
      "secret.py": ep,
      "notebooks/try.py": ep,
      "scratch/a.py": ep,
      "svc.config.ts": "export default {}\n",
      "package.json": "{}\n",
      "package-lock.json": "{}\n",
      "requirements.txt": "pillow\n",
      "README.md": "# app\n",
      "docs/README.md": "kept: only the root README is project metadata\n",
    });
    expect(await listSourceFiles(root, ["scratch/"])).toEqual(["docs/README.md", "main.py", "pkg/__init__.py", "pkg/model.py", "pkg/weights.bin"]);
  });

  it("maps files to module paths", () => {
    expect(modulePath("a/b.py")).toBe("a.b");
    expect(modulePath("a/__init__.py")).toBe("a");
    expect(modulePath("main.py")).toBe("main");
  });

  it("rejects an endpoint in a file whose module path is not importable", async () => {
    const root = tempApp({ "my-app/worker.py": 'from svc import Endpoint\n\n@Endpoint(name="w")\ndef f():\n    pass\n' });
    const error = await caught(() => discover(root));
    expect(error).toMatchObject({ code: "ENDPOINT_ARGUMENT_INVALID", file: "my-app/worker.py", line: 3 });
    expect(error.message).toContain('"my-app.worker"');
  });

  it("warns about an Endpoint object with no routes", async () => {
    const root = tempApp({ "a.py": 'from svc import Endpoint\napi = Endpoint(name="api")\n@Endpoint(name="w")\ndef f():\n    pass\n' });
    const config = await resolveConfig(root, {});
    const ctx = createContext(root, config, { ...defaultBuildOptions, until: "manifest" }, createLogger("silent"));
    await new Pipeline([discoverPython({ parser })]).hooks.discover.promise([], ctx);
    expect(ctx.logger.warnings).toEqual([expect.stringContaining('a.py:2: Endpoint object "api" has no routes')]);
  });
});

describe("static evaluation of Endpoint arguments", () => {
  it("evaluates literals, containers, unary minus, constants and GpuGroup members", async () => {
    const result = await analyse(`
import svc
from svc import Endpoint, GpuGroup as G
BASE = -2.5
NAME: str = "w"
ALIAS = NAME
GPUS = (G.ADA_24, svc.GpuGroup.AMPERE_80)

@Endpoint(NAME, gpu=[GPUS[0]] if False else GPUS, flashboot=False)
def f(): pass
`).catch((error) => error);
    // a conditional expression is not static
    expect(result).toMatchObject({ error: { code: "NON_STATIC_ARGUMENT", line: 9, argument: "gpu", source: "[GPUS[0]] if False else GPUS" } });

    const ok = await analyse(`
import svc
from svc import Endpoint, GpuGroup as G
BASE = -2.5
NAME: str = "w"
ALIAS = NAME
GPUS = (G.ADA_24, svc.GpuGroup.AMPERE_80)

@Endpoint(ALIAS, gpu=GPUS, env={"A": "1", "B": ""}, scaler_value=+3, idle_timeout=-BASE, workers=[0, 2], dependencies=None, flashboot=True)
async def f():
    async def inner():
        yield 1
    return [x async for x in inner()]

@svc.Endpoint(name="gen")
async def g():
    yield 1
`);
    expect(ok.error).toBeUndefined();
    if (ok.error) return;
    expect(ok.functions.map((fn) => [fn.name, fn.isAsync, fn.isGenerator])).toEqual([
      ["f", true, false],
      ["g", true, true],
    ]);
    expect(ok.functions[0]!.declaration.args).toEqual({
      name: "w",
      gpu: ["ADA_24", "AMPERE_80"],
      env: { A: "1", B: "" },
      scaler_value: 3,
      idle_timeout: 2.5,
      workers: [0, 2],
      dependencies: null,
      flashboot: true,
    });
  });

  it.each([
    ["a name assigned twice", "X = 1\nX = 2\n", "workers=X", "X"],
    ["a name assigned in a branch", "import sys\nif sys.argv:\n    X = 1\n", "workers=X", "X"],
    ["an augmented constant", "X = 1\nX += 1\n", "workers=X", "X"],
    ["an unknown name", "", "workers=UNKNOWN", "UNKNOWN"],
    ["a function call", "import os\n", 'env={"K": os.getenv("K")}', 'os.getenv("K")'],
    ["arithmetic", "", "execution_timeout=60 * 10", "60 * 10"],
    ["an f-string", 'V = "1"\n', 'name=f"w{V}"', 'f"w{V}"'],
    ["**kwargs", "OPTS = {}\n", "**OPTS", "**OPTS"],
  ])("rejects %s", async (_what, prelude, args, source) => {
    const result = await analyse(`from svc import Endpoint\n${prelude}\n@Endpoint(${args})\ndef f():\n    pass\n`);
    expect(result.error).toMatchObject({ code: "NON_STATIC_ARGUMENT", source });
  });

  it("finds @api routes, the queue-based @worker form, and rejects endpoints not at module level", async () => {
    const ok = await analyse(`from svc import Endpoint
api = Endpoint(name="api")
worker = Endpoint(name="worker", cpu="cpu3c-2-4")

@api.put(path="/items")
@api.delete("/items")
def items(): pass

@worker
def work(): pass
`);
    if (ok.error) throw new Error(ok.error.message);
    expect(ok.functions.map((fn) => [fn.name, fn.route?.method, fn.route?.path, fn.declaration.variable])).toEqual([
      ["items", "PUT", "/items", "api"],
      ["items", "DELETE", "/items", "api"],
      ["work", undefined, undefined, "worker"],
    ]);
    const nested = await analyse('from svc import Endpoint\nclass K:\n    @Endpoint(name="k")\n    def f(self): pass\n');
    expect(nested.error).toMatchObject({ code: "ENDPOINT_ARGUMENT_INVALID", line: 3 });
  });

  it("reports syntax errors with their line", async () => {
    expect((await analyse("x = 1\n\ndef f(:\n    pass\n")).error).toMatchObject({ code: "PYTHON_SYNTAX", line: 3 });
  });
});

describe("parameters and imports from the AST", () => {
  it("emits each function's parameters (kind, annotation, static default or its source) and return annotation", async () => {
    const analysis = await analyse(
      [
        "from svc import Endpoint",
        "STEPS = 20",
        "@Endpoint(name='w')",
        "def work(prompt: str, /, steps: int = STEPS, *rest, mode: \"Literal['a', 'b']\" = 'a', opts: dict = dict(), **extra) -> dict[str, int]:",
        "    return {}",
      ].join("\n"),
    );
    if (analysis.error) throw new Error(analysis.error.message);
    const [fn] = analysis.functions;
    expect(fn!.params).toEqual([
      { name: "prompt", kind: "positional_only", annotation: "str", required: true },
      { name: "steps", kind: "positional_or_keyword", annotation: "int", required: false, default: 20 },
      { name: "rest", kind: "var_positional", required: false },
      { name: "mode", kind: "keyword_only", annotation: "Literal['a', 'b']", required: false, default: "a" },
      { name: "opts", kind: "keyword_only", annotation: "dict", required: false, defaultSource: "dict()" },
      { name: "extra", kind: "var_keyword", required: false },
    ]);
    expect(fn!.returns).toBe("dict[str, int]");
  });

  it("lists the imports that run at import time, not guarded, TYPE_CHECKING or function-body ones", async () => {
    const analysis = await analyse(
      [
        "from __future__ import annotations",
        "import os, numpy as np",
        "from .helpers import tool",
        "from typing import TYPE_CHECKING",
        "if TYPE_CHECKING:",
        "    import mypy_extensions",
        "try:",
        "    import ujson as json",
        "except ImportError:",
        "    import json",
        "if os.name == 'nt':",
        "    import winreg",
        "def f():",
        "    import requests",
      ].join("\n"),
    );
    if (analysis.error) throw new Error(analysis.error.message);
    expect(analysis.imports.map((i) => `${".".repeat(i.level)}${i.module}${i.names.length ? `:${i.names.join(",")}` : ""}@${i.line}`)).toEqual([
      "os@2",
      "numpy@2",
      ".helpers:tool@3",
      "typing:TYPE_CHECKING@4",
      "json@10",
      "winreg@12",
    ]);
  });

  it("records each file's imports on ctx.pythonImports", async () => {
    const ctx = await discover(join(FIXTURES, "multi-endpoint"));
    expect(Object.keys(ctx.pythonImports ?? {})).toEqual(ctx.sourceFiles.filter((file) => file.endsWith(".py")));
  });
});

describe("PythonParser", () => {
  it("never re-parses an unchanged file, and re-parses a changed one", async () => {
    const source = Buffer.from(`# unique ${Date.now()} ${Math.random()}\nX = 1\n`);
    const before = parser.parsedFiles;
    await parser.parse([{ path: "a.py", source }]);
    expect(parser.parsedFiles).toBe(before + 1);
    const [again] = await parser.parse([{ path: "b.py", source }]);
    expect(parser.parsedFiles).toBe(before + 1);
    expect(again!.path).toBe("b.py");
    await parser.parse([{ path: "a.py", source: Buffer.concat([source, Buffer.from("Y = 2\n")]) }]);
    expect(parser.parsedFiles).toBe(before + 2);
  });

  it("answers several requests on one long-lived process", async () => {
    const results = await Promise.all([1, 2, 3].map((n) => parser.parse([{ path: `f${n}.py`, source: Buffer.from(`# ${Math.random()}\nN = ${n}\n`) }])));
    expect(results.map((r) => r[0]!.path)).toEqual(["f1.py", "f2.py", "f3.py"]);
  });

  it("also works as a one-shot JSON filter on stdin", () => {
    const source = Buffer.from('from svc import Endpoint\n@Endpoint(name="one")\ndef one(): pass\n').toString("base64");
    const run = spawnSync(pythonInterpreter(), [HELPER_DIR], { input: JSON.stringify({ files: [{ path: "one.py", source }] }), encoding: "utf8" });
    expect(JSON.parse(run.stdout).results[0].functions[0]).toMatchObject({ name: "one", line: 3, declaration: { line: 2, args: { name: "one" } } });
  });

  it("reports a missing interpreter as PYTHON_NOT_FOUND", async () => {
    const missing = new PythonParser({ python: "/nonexistent/python3" });
    const error = await caught(() => missing.parse([{ path: "x.py", source: Buffer.from(`# ${Math.random()}\n`) }]));
    missing.close();
    expect(error.code).toBe("PYTHON_NOT_FOUND");
  });
});
