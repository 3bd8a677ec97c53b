/**
 * For the dev-server tests and bench: a real embedded platform in this process (temp data dir,
 * loopback, free port) and a fresh copy of fixtures/dev-app.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningPlatform } from "../../platform/server.ts";

export const DEV_APP = new URL("../../fixtures/dev-app/", import.meta.url).pathname;

export interface TestPlatform {
  url: string;
  apiKey: string;
  dataDir: string;
  /** The platform's parts (its supervisor: workers and warm spares). */
  context: RunningPlatform["context"];
  close(): Promise<void>;
}

type StartedPlatform = Pick<RunningPlatform, "url" | "apiKey" | "context" | "close">;

export async function startTestPlatform(options: { log?: (line: string) => void } = {}): Promise<TestPlatform> {
  const dataDir = await mkdtemp(join(tmpdir(), "svc-dev-platform-"));
  const mod = (await import("../../platform/index.ts")) as unknown as {
    startPlatform(options: Record<string, unknown>): Promise<StartedPlatform>;
  };
  const started = await mod.startPlatform({
    dataDir,
    port: 0,
    host: "127.0.0.1",
    log: options.log ?? (() => {}),
    // Quick worker stops keep the tests short.
    stopGraceMs: 2000,
    killGraceMs: 1000,
  });
  return {
    url: started.url,
    apiKey: started.apiKey,
    dataDir,
    context: started.context,
    async close() {
      await started.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A copy of fixtures/dev-app in a temp folder (tests edit its files). */
export async function copyDevApp(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "svc-dev-app-"));
  await cp(DEV_APP, root, { recursive: true });
  return root;
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
