/** What a worker of an endpoint runs: which build, which handler, which image and env. */
import type { Store, EndpointRecord, BuildRow } from "../store/index.ts";
import { errors } from "../../core/errors.ts";
import type { RetryPolicy } from "../../core/endpoint-schema.ts";
import { sha256Hex } from "../_ids.ts";

export interface WorkerTarget {
  build: BuildRow;
  artifactPath: string;
  /** The endpoint's name in the manifest (SVC_ENDPOINT_NAME). */
  manifestName: string;
  handler: string;
  image: string;
  env: Record<string, string>;
  /** Egress for its workers: false where the endpoint says `network=False` (./sandbox-egress.ts). */
  network: boolean;
  /** `runpod`: a stock hosted-SDK worker, which gets that SDK's variables (./worker-process.ts). */
  runtime?: "runpod";
}

type ManifestEndpoints = Record<
  string,
  {
    name?: string;
    handler?: string;
    image?: string;
    type?: string;
    env?: Record<string, string>;
    retries?: RetryPolicy;
    network?: boolean;
    runtime?: string;
  }
>;

/**
 * The manifest endpoint a platform endpoint runs: the one with the same name; else the one whose
 * name ends the platform name after a prefix (`live-gpu-worker` → `gpu-worker`, the dev server's
 * endpoints); else the only one of the manifest.
 */
export function manifestEndpointFor(endpointName: string, endpoints: ManifestEndpoints): string | undefined {
  if (endpoints[endpointName]) return endpointName;
  const names = Object.keys(endpoints).sort((a, b) => b.length - a.length);
  const suffix = names.find((n) => endpointName.endsWith(`-${n}`));
  if (suffix) return suffix;
  return names.length === 1 ? names[0] : undefined;
}

/** The declared retries (`retries=`) of the manifest endpoint a platform endpoint runs in `build`. */
export function declaredRetries(build: BuildRow, endpointName: string): RetryPolicy | undefined {
  const endpoints = (build.manifest.endpoints ?? {}) as ManifestEndpoints;
  const name = manifestEndpointFor(endpointName, endpoints);
  return name ? endpoints[name]!.retries : undefined;
}

export function resolveWorkerTarget(store: Store, endpoint: EndpointRecord, buildId: string | null): WorkerTarget {
  if (!buildId) throw errors.NOT_FOUND("Build of endpoint", endpoint.name);
  const build = store.builds.get(buildId);
  if (!build) throw errors.NOT_FOUND("Build", buildId);
  const artifact = store.builds.artifact(build.sha256);
  if (!artifact) throw errors.NOT_FOUND("Artifact", build.sha256);
  const endpoints = (build.manifest.endpoints ?? {}) as ManifestEndpoints;
  const manifestName = manifestEndpointFor(endpoint.name, endpoints);
  if (!manifestName) throw errors.NOT_FOUND(`Endpoint in the manifest of build ${build.id}`, endpoint.name);
  const entry = endpoints[manifestName]!;
  const template = endpoint.templateId ? store.templates.get(endpoint.templateId) : undefined;
  const env: Record<string, string> = { ...(entry.env ?? {}) };
  for (const v of template?.env ?? []) env[v.key] = v.value;
  for (const v of endpoint.env) env[v.key] = v.value;
  return {
    build,
    artifactPath: artifact.path,
    manifestName,
    handler: entry.handler ?? `handlers/${manifestName.replace(/-/g, "_")}.py`,
    image: endpoint.imageName ?? template?.imageName ?? entry.image ?? "python",
    env,
    network: entry.network !== false,
    ...(entry.runtime === "runpod" ? { runtime: "runpod" as const } : {}),
  };
}

/** The build an endpoint's workers run: an environment's endpoints run its active build (docs/platform.md, "Deploys switch in one step"). */
export function activeBuildId(store: Store, endpoint: EndpointRecord): string | null {
  if (endpoint.environmentId) return store.apps.environment(endpoint.environmentId)?.activeBuildId ?? null;
  return endpoint.buildId;
}

/** What a worker runs, as a key: a worker whose key differs from its endpoint's is outdated. */
export function workerConfigKey(store: Store, endpoint: EndpointRecord): string {
  const build = activeBuildId(store, endpoint);
  return sha256Hex(
    JSON.stringify([build, endpoint.type, endpoint.imageName, endpoint.templateId, endpoint.env, endpoint.name, endpoint.networkVolumeId || null]),
  );
}

/** The endpoint's declared retries, read from its build's manifest (only when a job fails: not on the hot path). */
export function endpointRetries(store: Store, endpointId: string): RetryPolicy | undefined {
  const endpoint = store.endpoints.get(endpointId);
  const buildId = endpoint && activeBuildId(store, endpoint);
  const build = buildId ? store.builds.get(buildId) : undefined;
  return build && declaredRetries(build, endpoint!.name);
}
