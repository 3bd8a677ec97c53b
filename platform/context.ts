/** What the API routes share: the store, the queue, the workers and the settings. */
import type { Store } from "./store/index.ts";
import type { JobQueue } from "./queue/queue.ts";
import type { WebhookSender } from "./queue/webhooks.ts";
import type { Supervisor } from "./workers/supervisor.ts";
import type { Autoscaler } from "./workers/autoscaler.ts";
import type { ResolvedOptions } from "./options.ts";
import type { WorkerKeys } from "./worker-keys.ts";
import type { Secrets } from "./secrets.ts";
import type { Scheduler } from "./queue/scheduler.ts";
import type { Keys } from "./keys/keys.ts";
import type { Audit } from "./history/audit.ts";
import type { Telemetry } from "./telemetry/telemetry.ts";

export interface PlatformContext {
  store: Store;
  queue: JobQueue;
  supervisor: Supervisor;
  autoscaler: Autoscaler;
  webhooks: WebhookSender;
  options: ResolvedOptions;
  /** sha256 hex of the API key. */
  apiKeyHash: string;
  /** Workers' keys, scoped to their app and environment (./worker-keys.ts). */
  workerKeys: WorkerKeys;
  /** Named API keys with a role and a scope (./keys/keys.ts). */
  keys: Keys;
  /** The management actions' record (./history/audit.ts). */
  audit: Audit;
  /** Secrets, sealed at rest, opened only to start a worker (./secrets.ts). */
  secrets: Secrets;
  /** Scheduled endpoints' runs (./queue/scheduler.ts). */
  scheduler: Scheduler;
  /** Metrics and job traces: the collection points (./telemetry/telemetry.ts). */
  telemetry?: Telemetry;
  /** `http://127.0.0.1:8787`: known once the server listens. */
  baseUrl(): string;
}
