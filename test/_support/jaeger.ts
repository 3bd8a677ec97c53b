/**
 * A real Jaeger (v2's all-in-one, `cmd/jaeger` v1.76.0, built by scripts/setup.sh) on ports of its
 * own: OTLP/HTTP in, the query API out, in-memory storage, no self-metrics port. The traces test
 * and bench/platform/telemetry.ts start it.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

const config = (otlp: number, query: number, grpc: number) => `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:${query}
    grpc:
      endpoint: 127.0.0.1:${grpc}
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlp}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`;

export interface RunningJaeger {
  /** Where OTLP/HTTP goes: OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpUrl: string;
  /** The query API (`/api/traces/<id>`, `/api/traces?service=…`). */
  queryUrl: string;
  stop(): Promise<void>;
}

export async function startJaeger(bin: string, timeoutMs = 60_000): Promise<RunningJaeger> {
  const dir = await mkdtemp(join(tmpdir(), "svc-jaeger-"));
  const [otlp, query, grpc] = [await freePort(), await freePort(), await freePort()];
  await writeFile(join(dir, "config.yaml"), config(otlp, query, grpc));
  const child = spawn(bin, ["--config", `file:${join(dir, "config.yaml")}`], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk).slice(-4000)));
  const queryUrl = `http://127.0.0.1:${query}`;
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`jaeger exited (${child.exitCode}): ${stderr}`);
    }
    if ((await fetch(`${queryUrl}/api/services`).catch(() => undefined))?.ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`jaeger's query API did not answer within ${timeoutMs} ms: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { otlpUrl: `http://127.0.0.1:${otlp}`, queryUrl, stop };
}
