/**
 * Secrets (issue 18), end to end: `svc secret create` (the real CLI, the value on stdin) on a real
 * embedded platform, fixtures/containment/secrets deployed with `svc deploy`'s code, and a worker
 * that reads the value from its env. The value is then searched for everywhere else it must not
 * be: the artifact (unpacked), the manifests, .svc/, the platform's database file (sealed at
 * rest), GraphQL's answers, worker and platform logs. A reference to a missing secret fails the
 * deploy (and `svc run`) before anything is installed, packed or uploaded; `svc run`'s workers get
 * the value as deployed ones do.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { startDevServer } from "../../dev/index.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { rejection } from "../_support/rejection.ts";
import { api, runtimeCompileDone } from "./_support.ts";

const FIXTURE = new URL("../../fixtures/containment/secrets/", import.meta.url).pathname;
const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;
const VALUE = `hf_${createHash("sha256").update(String(process.pid)).digest("hex").slice(0, 24)}`;

/** Every file under `dir`, gzip files also unpacked (the artifact), as bytes. */
async function filesUnder(dir: string): Promise<Array<{ path: string; bytes: Buffer }>> {
  const out: Array<{ path: string; bytes: Buffer }> = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const bytes = await readFile(path);
    out.push({ path, bytes: path.endsWith(".gz") ? gunzipSync(bytes) : bytes });
  }
  return out;
}

describe("secrets", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let dataDir: string;
  const platformLog: string[] = [];
  const roots: string[] = [];
  const logger = createLogger("error", () => undefined);

  const svc = (args: string[], input: string, env: Record<string, string> = {}) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [BIN, ...args],
        { env: { ...process.env, PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey, NO_COLOR: "1", ...env }, timeout: 60_000 },
        (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin!.end(input);
    });
  const copyFixture = async () => {
    const root = await mkdtemp(join(tmpdir(), "svc-secrets-app-"));
    roots.push(root);
    await cp(FIXTURE, root, { recursive: true });
    return root;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-secrets-platform-"));
    platform = await startPlatform({ dataDir, port: 0, log: (line) => platformLog.push(line) });
    client = createPlatformClient(platform);
  }, 60_000);
  afterAll(async () => {
    await platform?.close();
    for (const dir of [dataDir, ...roots]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("svc secret create / list / delete: the value from stdin or --from-env, names only in the list", async () => {
    const created = await svc(["secret", "create", "hf_token"], `${VALUE}\n`);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain("{{ PLATFORM_SECRET_hf_token }}");
    expect(created.stdout + created.stderr).not.toContain(VALUE);
    const fromEnv = await svc(["secret", "create", "other", "--from-env", "SOME_TOKEN"], "", { SOME_TOKEN: "from-env-value" });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    const again = await svc(["secret", "create", "hf_token"], "x");
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("exists already");

    const onArgv = await svc(["secret", "create", "argv_one", "the-value"], "");
    expect(onArgv.code).not.toBe(0);
    expect(onArgv.stderr).toContain("never comes from the command line");

    const list = await svc(["secret", "list", "--json"], "");
    const names = (JSON.parse(list.stdout) as { secrets: Array<Record<string, unknown>> }).secrets;
    expect(names.map((s) => s.name)).toEqual(["hf_token", "other"]);
    expect(list.stdout).not.toContain(VALUE);
    expect(list.stdout).not.toContain("from-env-value");
    expect(Object.keys(names[0]!).sort()).toEqual(["createdAt", "id", "name"]);

    const deleted = await svc(["secret", "delete", "other", "--yes"], "");
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await client.listSecrets()).map((s) => s.name)).toEqual(["hf_token"]);
    expect((await stat(join(dataDir, "secrets.key"))).mode & 0o777).toBe(0o600);
  }, 120_000);

  it("a deployed worker sees the value; the artifact, manifests, .svc/, database, GraphQL and logs do not", async () => {
    const root = await copyFixture();
    const { summary } = await runDeploy({ root, client, logger });
    const endpoint = summary.endpoints.find((e) => e.name === "hub-token")!;
    const run = await api(platform, "POST", `/v2/${endpoint.id}/runsync`, { input: {} });
    expect(run.body, JSON.stringify(run.body)).toMatchObject({
      status: "COMPLETED",
      output: { sha256: createHash("sha256").update(VALUE).digest("hex"), plain: "plain" },
    });

    await runtimeCompileDone(dataDir);
    for (const file of [...(await filesUnder(join(root, ".svc"))), ...(await filesUnder(dataDir))]) {
      expect(file.bytes.includes(VALUE), file.path).toBe(false);
    }
    const views = await client.graphql<any>("q", `{ myself { endpoints { env { key value } } apps { builds { manifest } } } }`);
    const text = JSON.stringify(views);
    expect(text).not.toContain(VALUE);
    expect(text).toContain("{{ PLATFORM_SECRET_hf_token }}"); // GraphQL shows the reference
    const logs = await client.workerLogs(endpoint.id, 1000);
    expect(logs.some((line) => line.includes("HF_TOKEN has"))).toBe(true);
    expect([...logs, ...platformLog].join("\n")).not.toContain(VALUE);
  }, 240_000);

  it("svc run: the dev server's live- worker gets the value too; a missing secret stops it before the build", async () => {
    const server = await startDevServer({ root: await copyFixture(), client, port: 0, logger, reload: false });
    try {
      const res = await fetch(`${server.url}/hub/runsync`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ input: {} }),
      });
      expect(await res.json()).toMatchObject({ status: "COMPLETED", output: { sha256: createHash("sha256").update(VALUE).digest("hex") } });
    } finally {
      await server.close();
    }
    const broken = await copyFixture();
    const source = await readFile(join(broken, "hub.py"), "utf8");
    await writeFile(join(broken, "hub.py"), source.replace("PLATFORM_SECRET_hf_token", "PLATFORM_SECRET_not_there"));
    const error = await rejection(startDevServer({ root: broken, client, port: 0, logger, reload: false }));
    expect(error.code).toBe("SECRET_MISSING");
  }, 240_000);

  it("a reference to a missing secret fails the deploy before the build, naming it and the remedy", async () => {
    const root = await copyFixture();
    const source = await readFile(join(root, "hub.py"), "utf8");
    await writeFile(join(root, "hub.py"), source.replace("PLATFORM_SECRET_hf_token", "PLATFORM_SECRET_not_there"));
    const error = await rejection(runDeploy({ root, client, logger }));
    expect(error.code).toBe("SECRET_MISSING");
    expect(error.message).toContain("not_there");
    expect(error.message).toContain("svc secret create not_there");
    // nothing packed, nothing uploaded
    await expect(stat(join(root, ".svc", "artifact.tar.gz"))).rejects.toThrow();
    expect((await client.getApp("secrets-app"))?.environments.flatMap((e) => e.endpoints).map((e) => e.env.find((v) => v.key === "HF_TOKEN")?.value)).toEqual([
      "{{ PLATFORM_SECRET_hf_token }}",
    ]);
  }, 120_000);
});
