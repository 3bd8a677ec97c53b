/**
 * `svc key` and `svc audit` as users run them (bin/svc.mjs) against a real embedded platform in this
 * process (docs/platform.md, "Keys and roles", "Audit"): create prints the secret once and list never
 * shows it; the new key works as PLATFORM_API_KEY within its role and is refused beyond it; revoke
 * asks first without a terminal, and `svc audit` shows each action once with the key that made it.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";
import { runSvc } from "../_support/cli.ts";

describe("svc key and svc audit (real CLI, real platform)", () => {
  let platform: RunningPlatform;
  let root: string;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "svc-keys-platform-"));
    root = await mkdtemp(join(tmpdir(), "svc-keys-app-"));
    await writeFile(join(root, "svc.config.ts"), 'export default { app: "keys-app" };\n');
    platform = await startPlatform({ dataDir, port: 0, log: () => {} });
  });
  afterAll(async () => {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(root, { recursive: true, force: true });
  });

  const svc = (key: string, ...args: string[]) =>
    runSvc([...args, "--root", root], { env: { ...process.env, PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: key, NO_COLOR: "1" } });

  it("creates, lists, uses within its role, revokes, and audits", { timeout: 180_000 }, async () => {
    const created = await svc(platform.apiKey, "key", "create", "reader", "--role", "read", "--app", "keys-app", "--json");
    expect(created.code, created.stderr).toBe(0);
    const { secret, key } = JSON.parse(created.stdout);
    expect(secret).toMatch(/^svck_/);
    expect(key).toMatchObject({ name: "reader", role: "read", app: "keys-app", env: null });

    const listed = await svc(platform.apiKey, "key", "list");
    expect(listed.stdout).toMatch(/reader\s+read\s+app keys-app/);
    expect(listed.stdout).not.toContain(secret);

    // the read key lists apps (only its own), and may not see the audit log or make keys
    const apps = await svc(secret, "app", "list", "--json");
    expect(apps.code, apps.stderr).toBe(0);
    const audit = await svc(secret, "audit");
    expect(audit.code).not.toBe(0);
    expect(audit.stderr).toContain('Key "reader" (role read, app keys-app) may not call Query.auditLog: that needs role admin');
    const escalate = await svc(secret, "key", "create", "mine", "--role", "admin");
    expect(escalate.stderr).toContain("may not call Mutation.apiKeyCreate");

    const unasked = await svc(platform.apiKey, "key", "revoke", "reader"); // no terminal, no --yes
    expect(unasked.stderr).toContain("CONFIRMATION_REQUIRED");
    const revoked = await svc(platform.apiKey, "key", "revoke", "reader", "--yes");
    expect(revoked.code, revoked.stderr).toBe(0);
    const after = await svc(secret, "app", "list");
    expect(after.code).not.toBe(0);
    expect(after.stderr).toContain("AUTH_FAILED");

    const log = await svc(platform.apiKey, "audit", "--json");
    const entries = (JSON.parse(log.stdout).entries as Array<{ keyName: string; action: string; target: string | null; outcome: string }>).reverse();
    expect(entries.map((e) => [e.keyName, e.action, e.target, e.outcome])).toEqual([
      ["platform", "key.create", "reader", "ok"],
      ["reader", "key.create", null, "KEY_FORBIDDEN"],
      ["platform", "key.revoke", "reader", "ok"],
    ]);
    const table = await svc(platform.apiKey, "audit");
    expect(table.stdout).toMatch(/platform\s+key\.revoke\s+-\s+reader\s+ok/);
  });
});
