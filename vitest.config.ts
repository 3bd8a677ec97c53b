import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Tests start real Python processes, pip and platforms on loopback: give them room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The CI machine has 2 cores; more parallel files only add contention.
    maxWorkers: 2,
  },
});
