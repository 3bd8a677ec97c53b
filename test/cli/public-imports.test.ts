/**
 * platform/local.ts, the light entry of the platform that svc's commands import at startup, loads
 * none of the server's modules. (Which folder imports which, and through which public modules:
 * test/core/layers.test.ts.)
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

describe("platform/local.ts", () => {
  it("loads no server, SQLite, h3 or worker module (what svc's commands import at startup)", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "svc-local-entry-"));
    try {
      const trace = join(tmp, "trace.txt");
      writeFileSync(trace, "");
      writeFileSync(
        join(tmp, "hooks.mjs"),
        `import { appendFileSync } from "node:fs";\nexport async function load(url, context, next) {\n  appendFileSync(${JSON.stringify(trace)}, url + "\\n");\n  return next(url, context);\n}\n`,
      );
      const script = [
        `import { register } from "node:module";`,
        `register(${JSON.stringify(pathToFileURL(join(tmp, "hooks.mjs")).href)});`,
        `const tsx = await import("tsx/esm/api");`,
        `tsx.register();`,
        `const local = await import(${JSON.stringify(pathToFileURL(join(ROOT, "platform/local.ts")).href)});`,
        `if (typeof local.runningPlatform !== "function") throw new Error("runningPlatform is not exported");`,
      ].join("\n");
      await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT });
      const loaded = readFileSync(trace, "utf8").split("\n").filter(Boolean);
      expect(loaded.some((url) => url.endsWith("/platform/state-dir.ts"))).toBe(true);
      expect(
        loaded.filter((url) => /\/node_modules\/(h3|better-sqlite3)\/|\/platform\/(server|context|store\/|api\/|queue\/|workers\/|graphql\/)/.test(url)),
      ).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
