/**
 * The platform side of the dev routes (DevRoutesState): deploy an endpoint when a route first
 * needs it, then runsync, status and load-balanced requests on its platform URL.
 */
import type { PlatformClient } from "../core/client/index.ts";
import type { Logger } from "../core/logger.ts";
import type { CurrentBuild } from "./current-build.ts";
import type { Provisioner } from "./provisioning/provisioner.ts";
import type { Job } from "./routes/input.ts";
import { createDevApp, type DevRoutesState, type RemoteRef } from "./routes/routes.ts";

export interface PlatformCallsOptions {
  client: PlatformClient;
  current: CurrentBuild;
  provisioner: Provisioner;
  logger: Logger;
  health(): Record<string, unknown>;
  /** An endpoint was deployed (or re-created) by a call: its URL goes on the build. */
  onDeployed(): void;
  syncTimeoutMs: number;
}

/**
 * A FAILED job's body does not say whether the function rejected its input: the platform says it
 * with HTTP 400 on runsync / status-sync, which the client's runsync does not pass on. One
 * status-sync call on the (final) job answers at once with that code.
 */
async function finalHttpStatus(client: PlatformClient, remote: RemoteRef, job: Job): Promise<number | undefined> {
  if (job.status !== "FAILED") return undefined;
  try {
    const res = await fetch(`${remote.url}/status-sync/${encodeURIComponent(job.id)}?wait=1000`, {
      headers: { authorization: `Bearer ${client.apiKey}`, accept: "application/json" },
      signal: AbortSignal.timeout(5000),
    });
    await res.arrayBuffer();
    return res.status === 400 || res.status === 200 ? res.status : undefined;
  } catch {
    return undefined;
  }
}

export function routesState(options: PlatformCallsOptions): DevRoutesState {
  const { client, current, provisioner, logger } = options;
  return {
    manifest: () => current.manifest,
    table: () => current.table,
    health: options.health,
    async ensure(endpoint) {
      const known = provisioner.remoteOf(endpoint);
      const remote = await provisioner.ensure(endpoint);
      if (!known || known.id !== remote.id) options.onDeployed();
      return remote;
    },
    async runsync(remote, input, timeoutMs) {
      const job = await client.runsync(remote.url || remote.id, input, {
        timeoutMs,
        onPending: (pending) => logger.debug(`job ${pending.id}: ${pending.status}`),
      });
      return { job, httpStatus: await finalHttpStatus(client, remote, job) };
    },
    async status(remote, jobId) {
      const job = await client.status(remote.url || remote.id, jobId);
      return { job, httpStatus: await finalHttpStatus(client, remote, job) };
    },
    lbRequest: (remote, method, path, body, headers) => client.lbRequest(remote.url, method, path, body, headers),
    // The platform's own /metrics, read with the user's key: the dev server adds none of its own.
    metrics: () => fetch(`${client.url}/metrics`, { headers: { authorization: `Bearer ${client.apiKey}` }, signal: AbortSignal.timeout(10_000) }),
    syncTimeoutMs: options.syncTimeoutMs,
  };
}

/** The dev server's h3 app, wired to the platform. */
export const createPlatformApp = (options: PlatformCallsOptions) => createDevApp(routesState(options), (line) => options.logger.error(line));
