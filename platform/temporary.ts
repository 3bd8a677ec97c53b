/**
 * An embedded platform of a test's own: in a temporary folder (unless one is given), on loopback at
 * a free port, its log lines kept; dispose() stops it and removes the folder. svc/testing's
 * startTestPlatform (a plugin author's tests) and svc's own platform tests start theirs here.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PlatformOptions } from "./options.ts";
import { startPlatform, type RunningPlatform } from "./server.ts";

export interface TemporaryPlatform extends RunningPlatform {
  /** Its log lines (none when `options.log` takes them). */
  logs: string[];
  /** Stops it (its workers too) and removes its folder. */
  dispose(): Promise<void>;
}

export async function startTemporaryPlatform(options: Partial<PlatformOptions> = {}): Promise<TemporaryPlatform> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), "svc-platform-test-")));
  const logs: string[] = [];
  const platform = await startPlatform({ port: 0, log: (line) => logs.push(line), ...options, dataDir });
  return Object.assign(platform, {
    logs,
    async dispose() {
      await platform.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  });
}
