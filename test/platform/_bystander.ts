/**
 * Another app's client while a hostile one abuses the platform (issue 27): it calls its own
 * endpoint's runsync and /health in a loop and keeps every latency and failure, so a test can
 * assert that it kept answering and report its /health p99.
 */
import { api } from "./_support.ts";

export interface BystanderReport {
  runsyncs: number;
  healths: number;
  failures: string[];
  healthP99Ms: number;
  runsyncP99Ms: number;
}

const p99 = (values: number[]) =>
  values.length === 0 ? NaN : [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * 0.99))]!;

/** Starts the loop; `stop()` ends it and answers what it saw. */
export function bystander(p: { url: string; apiKey: string }, endpointId: string): { stop(): Promise<BystanderReport> } {
  let running = true;
  const health: number[] = [];
  const runsync: number[] = [];
  const failures: string[] = [];
  const timed = async (into: number[], call: () => Promise<{ status: number; body: any }>, ok: (r: { status: number; body: any }) => boolean, what: string) => {
    const start = performance.now();
    try {
      const r = await call();
      if (!ok(r)) failures.push(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    } catch (error) {
      failures.push(`${what}: ${(error as Error).message}`);
    }
    into.push(performance.now() - start);
  };
  const loop = (async () => {
    while (running) {
      await timed(
        health,
        () => api(p, "GET", `/v2/${endpointId}/health`),
        (r) => r.status === 200,
        "health",
      );
      await timed(
        runsync,
        () => api(p, "POST", `/v2/${endpointId}/runsync`, { input: {} }),
        (r) => r.status === 200 && r.body?.status === "COMPLETED",
        "runsync",
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { runsyncs: runsync.length, healths: health.length, failures, healthP99Ms: p99(health), runsyncP99Ms: p99(runsync) };
    },
  };
}
