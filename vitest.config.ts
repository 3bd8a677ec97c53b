import { existsSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const ROOT = source(".");

/**
 * The files that take longest, slowest first (CI, 2026-12-01), started before the rest so that none of
 * them is what the run waits on at its end. vitest orders by its last run's durations once it has a
 * cache (node_modules/.vite); a fresh clone has none, and by file size (its fallback) the slowest came
 * 16th, the image-to-video ones past the 55th of 115.
 */
const SLOWEST = [
  "test/e2e/stock-worker.test.ts",
  "test/platform/ray-workers.test.ts",
  "test/e2e/deploy-chaos.test.ts",
  "test/plugins/installers.test.ts",
  "test/package/package.test.ts",
  "test/platform/fanout-limits.test.ts",
  "test/cli/volume.test.ts",
  "test/cli/deploy.test.ts",
  "test/cli/run.test.ts",
  "test/e2e/image-to-video.test.ts",
  "test/e2e/image-to-video-volume.test.ts",
  "test/e2e/image-to-video-distilled.test.ts",
  "test/cli/logs.test.ts",
  "test/cli/client.test.ts",
  "test/platform/durability.test.ts",
  // then the next tier (a run here, 2026-12-02): started late, these were what the run's last half minute waited on
  "test/e2e/volume-mount.test.ts",
  "test/platform/workers.test.ts",
  "test/platform/scalers.test.ts",
  "test/platform/jobs.test.ts",
  "test/platform/limits.test.ts",
  "test/e2e/cpu-image-deps.test.ts",
  "test/platform/fuzz.test.ts",
  "test/platform/resources.test.ts",
  "test/cli/rollback.test.ts",
  "test/platform/fanout.test.ts",
  "test/platform/schedules.test.ts",
  "test/core/platform-key.test.ts",
  "test/platform/graceful-stop.test.ts",
  "test/platform/gpu-workers.test.ts",
  "test/cli/keys.test.ts",
  "test/cli/platform.test.ts",
];

// a renamed or removed file would drop out of the order silently
for (const file of SLOWEST) if (!existsSync(source(file))) throw new Error(`vitest.config.ts SLOWEST names ${file}, which does not exist`);

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = SLOWEST.indexOf(relative(ROOT, file.moduleId));
      return at < 0 ? SLOWEST.length : at;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b)); // stable: the rest keep vitest's order
  }
}

export default defineConfig({
  // The package's own name as examples/svc-plugin-* import it, on the sources (tsconfig's paths do
  // the same for tsc; package.json's exports point at dist/, which a fresh clone has not built).
  resolve: {
    alias: [
      { find: /^@svc-dev\/svc$/, replacement: source("./core/index.ts") },
      { find: /^@svc-dev\/svc\/types$/, replacement: source("./core/types.ts") },
      { find: /^@svc-dev\/svc\/testing$/, replacement: source("./testing/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "examples/*/test/**/*.test.ts"],
    // the CLI built once for the run, python3 found past a version manager's shim (test/_support/global-setup.ts)
    globalSetup: ["test/_support/global-setup.ts"],
    // Tests start real Python processes, pip and platforms on loopback: give them room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // A fork runs file after file with the modules it loaded (the platform's, the SDK's): loading them
    // afresh for every file was a third of the quick suite's CPU (61 → 36 s). A file that changes
    // process.env puts it back (test/_support/env.ts) and closes what it started, as it always had to.
    isolate: false,
    // Four files at once on CI's 2 cores: most of a file's time is spent waiting on its workers,
    // installers and sockets, and the other files fill those waits (npm test here: 3 at once 618 and
    // 629 s, 4 at once 558 s; CONTRIBUTING.md, "Tests").
    maxWorkers: 4,
    sequence: { sequencer: SlowestFirst },
  },
});
