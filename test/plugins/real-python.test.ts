/**
 * The real interpreter behind a `python3` shim (docs/manifest.md, "Python interpreter"): the first
 * discovery goes through the shim and learns sys.executable; later builds start that interpreter
 * directly until the shim or a version file changes; SVC_PYTHON is started as given. The shim here
 * is a real script in front of the real interpreter (what pyenv installs), logging each start.
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createContext, defaultBuildOptions } from "../../core/build.ts";
import { resolveConfig } from "../../core/config.ts";
import { createLogger } from "../../core/logger.ts";
import { Pipeline } from "../../core/pipeline.ts";
import { PythonParser, startablePython } from "../../plugins/_python/index.ts";
import { discoverPython } from "../../plugins/discover-python/index.ts";
import { saveEnv } from "../_support/env.ts";

const REAL_PYTHON = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).stdout.trim();
const PATH = process.env.PATH;
const restoreEnv = saveEnv("PATH", "SVC_PYTHON", "PYENV_DIR");
let dir: string;
let shimLog: string;
let app: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-real-python-"));
  shimLog = join(dir, "shim.log");
  writeFileSync(join(dir, "python3"), `#!/bin/sh\necho started >> "${shimLog}"\nexec "${REAL_PYTHON}" "$@"\n`);
  chmodSync(join(dir, "python3"), 0o755);
  process.env.PATH = `${dir}:${PATH}`;
  process.env.PYENV_DIR = join(dir, "project-dir");
  delete process.env.SVC_PYTHON;
  app = join(dir, "app");
  mkdirSync(app);
  writeFileSync(join(app, "app.py"), 'from svc import Endpoint\n\n\n@Endpoint(name="echo", cpu="cpu3c-2-4")\ndef echo(text: str) -> str:\n    return text\n');
});

afterEach(() => {
  restoreEnv();
  rmSync(dir, { recursive: true, force: true });
});

const shimStarts = () => (existsSync(shimLog) ? readFileSync(shimLog, "utf8").split("\n").filter(Boolean).length : 0);

/** One discovery with a fresh helper process, after an edit so that Python must parse. */
async function discoverEdited(): Promise<PythonParser> {
  appendFileSync(join(app, "app.py"), `# edit ${Math.random()}\n`);
  const parser = new PythonParser();
  const ctx = createContext(app, await resolveConfig(app, {}), { ...defaultBuildOptions, until: "manifest" }, createLogger("silent"));
  try {
    const functions = await new Pipeline([discoverPython({ parser })]).hooks.discover.promise([], ctx);
    expect(functions.map((fn) => fn.name)).toEqual(["echo"]);
  } finally {
    parser.close();
  }
  return parser;
}

describe("the interpreter behind a python3 shim", () => {
  it("goes through the shim once, then starts the interpreter it reported", async () => {
    const first = await discoverEdited();
    expect(first.executable).toBe(REAL_PYTHON);
    expect(shimStarts()).toBe(1);
    await discoverEdited();
    await discoverEdited();
    expect(shimStarts()).toBe(1);
    expect(await startablePython(join(app, ".svc"), "python3")).toBe(REAL_PYTHON);
  });

  it("asks the shim again when the shim or a version file it reads changes", async () => {
    await discoverEdited();
    utimesSync(join(dir, "python3"), new Date(), new Date(Date.now() + 5000)); // a reinstalled shim
    await discoverEdited();
    expect(shimStarts()).toBe(2);
    await discoverEdited();
    expect(shimStarts()).toBe(2);
    mkdirSync(process.env.PYENV_DIR!);
    writeFileSync(join(process.env.PYENV_DIR!, ".python-version"), "3.11\n"); // `pyenv local 3.11`
    await discoverEdited();
    expect(shimStarts()).toBe(3);
  });

  it("starts SVC_PYTHON as given, even when it is the shim", async () => {
    await discoverEdited();
    process.env.SVC_PYTHON = join(dir, "python3");
    await discoverEdited();
    await discoverEdited();
    expect(shimStarts()).toBe(3);
    expect(await startablePython(join(app, ".svc"), process.env.SVC_PYTHON)).toBe(process.env.SVC_PYTHON);
  });
});
