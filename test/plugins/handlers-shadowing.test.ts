import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { EndpointSpec } from "../../core/types.ts";
import { writeHandlers } from "../../plugins/python-handlers.ts";

// Endpoints named like modules: their handler files sit beside every other handler, in the folder
// `python handlers/x.py` puts first on sys.path.
describe("svc:python-handlers: handler files shadow no module", () => {
  it("a worker of an app with endpoints json, queue and svc imports the real modules", async () => {
    const build = mkdtempSync(join(tmpdir(), "svc-shadow-"));
    const endpoints = ["json", "queue", "svc", "api"].map((name) => ({ name }) as EndpointSpec);
    await writeHandlers(build, endpoints);
    // Stands in for the runtime's serve(): says where the modules it would use came from.
    const runtime = join(build, "runtime");
    mkdirSync(join(runtime, "svc"), { recursive: true });
    writeFileSync(join(runtime, "svc", "__init__.py"), "");
    writeFileSync(
      join(runtime, "svc", "worker.py"),
      "import json, queue\nimport svc\ndef serve(name):\n    print(name, json.__file__, queue.__file__, svc.__file__)\n",
    );
    const out = execFileSync("python3", ["-s", "handlers/api.py"], {
      cwd: build,
      env: { PATH: process.env.PATH, PYTHONPATH: runtime },
      encoding: "utf8",
    });
    expect(out.startsWith("api ")).toBe(true);
    expect(out).not.toContain("/handlers/");
    expect(out).toContain(join(runtime, "svc", "__init__.py"));
  });
});
