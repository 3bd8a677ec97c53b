/** The platform's short commands run in a helper process of their own (platform/workers/command-runner.ts), not forked from the platform's. */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCommand } from "../../platform/workers/command-runner.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-commands-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("runCommand", () => {
  it("runs each command in the helper, its input given, several at once", async () => {
    const files = [0, 1, 2].map((i) => join(dir, `parent-${i}`));
    // each command writes its parent's pid (the process that spawned it) and what it read
    await Promise.all(files.map((file, i) => runCommand("sh", ["-c", `echo $PPID > ${file}; cat >> ${file}`], `input ${i}\n`)));
    const parents = files.map((file) => readFileSync(file, "utf8").split("\n"));
    for (const [i, [parent, input]] of parents.entries()) {
      expect(Number(parent)).toBeGreaterThan(0);
      expect(Number(parent)).not.toBe(process.pid); // not forked from this (the platform's) process
      expect(input).toBe(`input ${i}`);
    }
    expect(new Set(parents.map(([parent]) => parent)).size).toBe(1); // one helper for them all
  });

  it("rejects with the command, its exit code and its stderr; a missing command too", async () => {
    await expect(runCommand("sh", ["-c", "echo 'no such namespace' >&2; exit 3"])).rejects.toThrow(/^sh -c .* exited 3: no such namespace$/);
    await expect(runCommand("svc-no-such-command", ["x"])).rejects.toThrow(/svc-no-such-command x exited null: .*ENOENT/);
  });

  it("does not keep the process alive once its commands are done", async () => {
    await runCommand("true", []);
    const script = `import { runCommand } from ${JSON.stringify(join(import.meta.dirname, "../../platform/workers/command-runner.ts"))};
await runCommand("true", []); console.log("ran");`;
    const { execFileSync } = await import("node:child_process");
    const started = performance.now();
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    expect(out.trim()).toBe("ran");
    expect(performance.now() - started).toBeLessThan(15_000); // it exited by itself, the helper with it
  });
});
