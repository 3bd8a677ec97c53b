/** `svc init` and `svc build` through the real command line (node bin/svc.mjs). */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { copyFixture, pypiReachable } from "../plugins/_helpers.ts";

const BIN = resolve(import.meta.dirname, "../../bin/svc.mjs");
const exec = promisify(execFile);
const online = await pypiReachable();
if (!online) console.warn("svc init + build with dependencies is built with --no-deps: https://pypi.org did not answer a HEAD request");

async function svc(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: "1" }, maxBuffer: 32 << 20 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout: string; stderr: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("svc init", () => {
  it("scaffolds a project that svc build builds with no edits", { timeout: 180_000 }, async () => {
    const parent = mkdtempSync(join(tmpdir(), "svc-init-"));
    const init = await svc(["init", "hello-app"], parent);
    expect(init.code, init.stderr).toBe(0);
    const dir = join(parent, "hello-app");
    for (const file of [
      "workers/gpu_worker.py",
      "workers/cpu_worker.py",
      "workers/api.py",
      "requirements.txt",
      ".env.example",
      ".gitignore",
      "svc.config.ts",
      "README.md",
    ]) {
      expect(existsSync(join(dir, file)), file).toBe(true);
    }
    expect(readFileSync(join(dir, ".env.example"), "utf8")).toMatch(/^PLATFORM_API_KEY=$/m);
    expect(readFileSync(join(dir, ".env.example"), "utf8")).toMatch(/^PLATFORM_API_URL=$/m);
    expect(readFileSync(join(dir, "svc.config.ts"), "utf8")).toContain('app: "hello-app"');
    expect(init.stdout).toContain("Next steps:");
    // A key set by hand is checked against the embedded platform too: the steps say to leave it empty.
    expect(init.stdout).toContain("leave it empty for the embedded platform");
    expect(init.stdout).toContain("set PLATFORM_API_URL and PLATFORM_API_KEY");
    expect(readFileSync(join(dir, "README.md"), "utf8")).toContain("leave it empty for the embedded platform");

    const build = await svc(["build", "--json", ...(online ? [] : ["--no-deps"])], dir);
    expect(build.code, build.stderr + build.stdout).toBe(0);
    const result = JSON.parse(build.stdout);
    expect(result.ok).toBe(true);
    expect(result.endpoints.map((e: { name: string; type: string }) => `${e.name}:${e.type}`)).toEqual(["api:LB", "cpu-worker:QB", "gpu-worker:QB"]);
    const artifact = readFileSync(result.artifact.path);
    expect(artifact.length).toBe(result.artifact.size);
    if (online) expect(result.requirements).toEqual([{ spec: "humanize==4.12.3", source: "requirements.txt:3" }]);
  });

  it("prints a cd line the shell can run when the folder name needs quoting", async () => {
    const parent = mkdtempSync(join(tmpdir(), "svc-init-"));
    const init = await svc(["init", "bad name!"], parent);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain("Created app bad-name in 'bad name!':");
    expect(init.stdout).toContain("  cd 'bad name!'\n");
    expect(readFileSync(join(parent, "bad name!", "svc.config.ts"), "utf8")).toContain('app: "bad-name"');
  });

  it("refuses to overwrite existing files without --force", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-init-"));
    writeFileSync(join(dir, "requirements.txt"), "mine\n");
    const refused = await svc(["init"], dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("INIT_WOULD_OVERWRITE");
    expect(refused.stderr).toContain("requirements.txt");
    expect(readFileSync(join(dir, "requirements.txt"), "utf8")).toBe("mine\n");
    expect(existsSync(join(dir, "workers"))).toBe(false);
    const forced = await svc(["init", "--force"], dir);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(join(dir, "requirements.txt"), "utf8")).toContain("humanize==");
  });
});

describe("svc build --json", () => {
  it("prints { ok, artifact, endpoints, excluded, timings, warnings } on stdout", { timeout: 60_000 }, async () => {
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "requirements.txt"), "numpy>=1\n");
    const { code, stdout, stderr } = await svc(["build", "--json", "--root", root, "--exclude", "pillow,numpy"], process.cwd());
    expect(code, stderr).toBe(0);
    const result = JSON.parse(stdout);
    expect(Object.keys(result)).toEqual(expect.arrayContaining(["ok", "artifact", "endpoints", "excluded", "timings", "warnings"]));
    expect(result.ok).toBe(true);
    expect(result.artifact).toMatchObject({
      path: join(root, ".svc", "artifact.tar.gz"),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      size: expect.any(Number),
    });
    expect(result.endpoints).toEqual([expect.objectContaining({ name: "cpu-worker", type: "QB", functions: ["hello"] })]);
    // a CPU app keeps numpy unless the user leaves it out (core/images.ts)
    expect(result.excluded).toEqual([{ name: "numpy", spec: "numpy>=1", source: "requirements.txt:1", reason: "excluded-by-user" }]);
    expect(Object.keys(result.timings)).toEqual([
      "discover",
      "group",
      "generateHandlers",
      "manifest",
      "resolveDependencies",
      "installDependencies",
      "pack",
      "afterPack",
    ]);
    expect(result.warnings).toEqual(expect.any(Array));
    // human progress goes to stderr, never into the JSON
    expect(stderr).toContain("pack");
  });

  it("reports an error as JSON with a non-zero exit code", async () => {
    const root = copyFixture("pack-app");
    writeFileSync(join(root, "svc.config.ts"), "export default { maxArtifactBytes: 1000 };\n");
    const { code, stdout } = await svc(["build", "--json", "--no-deps", "--root", root], process.cwd());
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toMatchObject({ ok: false, error: { code: "ARTIFACT_TOO_LARGE" } });
  });

  it("prints a summary with the artifact path, size, sha256 and endpoints", async () => {
    const root = copyFixture("pack-app");
    const { code, stdout, stderr } = await svc(["build", "--no-deps", "--root", root], process.cwd());
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/artifact\s+.*\.svc\/artifact\.tar\.gz/);
    expect(stdout).toMatch(/sha256\s+[0-9a-f]{64}/);
    expect(stdout).toMatch(/cpu-worker\s+QB\s+hello/);
    expect(stderr).toMatch(/✓ discover/);
  });
});
