import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

/**
 * `npm run test:quick`: the inner loop (CONTRIBUTING.md). The engine's, the plugins' and the dev
 * server's unit tests and the platform's parts that need no worker or installer: no pip or uv run, no
 * Ray, no browser-driven console, no full CLI round trips. `npm test` still runs everything.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      "test/core/**/*.test.ts",
      "test/plugins/**/*.test.ts",
      "test/dev/*.unit.test.ts",
      "test/platform/{queue,scheduler,uid-pool,webhook-targets,history,checkpointer,unpack,volumes-sigv4,graphql-cost,worker-lines,ray-options,gpus}.test.ts",
    ],
    exclude: ["test/core/platform-key.test.ts", "test/plugins/installers.test.ts", "test/plugins/pip-install.test.ts", "test/plugins/analyze.test.ts"],
  },
});
