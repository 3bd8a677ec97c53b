import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

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
    // Tests start real Python processes, pip and platforms on loopback: give them room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The CI machine has 2 cores; more parallel files only add contention.
    maxWorkers: 2,
  },
});
