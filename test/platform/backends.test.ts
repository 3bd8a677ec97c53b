/**
 * The worker-backend seam's shared cases (./_backend-contract.ts) against the local backend:
 * processes in the bwrap sandbox on this machine. ray-workers.test.ts runs the same cases against the
 * Ray backend on its cluster.
 */
import { describeBackend } from "./_backend-contract.ts";
import { startTestPlatform } from "./_support.ts";

describeBackend("local", async () => {
  const platform = await startTestPlatform();
  return {
    platform,
    placement: (w) => (w.proc && !w.remote ? `process ${w.proc.pid}` : undefined),
    ended: async (w) => w.proc !== undefined && (w.proc.exitCode !== null || w.proc.signalCode !== null),
    dispose: () => platform.dispose(),
  };
});
