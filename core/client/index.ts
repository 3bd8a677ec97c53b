/**
 * The platform client: one object per platform (hosted or embedded — same API), REST on undici and
 * GraphQL (`{url}/graphql`) on graphql-request 7. Every failure is an SvcError of core/errors.ts:
 * HTTP 401 → AUTH_FAILED (remedy: check PLATFORM_API_KEY in .env or exported); nobody listening →
 * PLATFORM_UNREACHABLE; GraphQL `errors` → PLATFORM_ERROR with the platform's message.
 *
 * Signatures other parts rely on (the dev server, deploy, undeploy):
 *
 *   resolvePlatform(env = process.env, { startEmbedded }): Promise<{ url, apiKey, embedded, keySource }>
 *     PLATFORM_API_URL (http/https, else PLATFORM_URL_INVALID) + PLATFORM_API_KEY (URL without key →
 *     AUTH_MISSING); no URL → the embedded platform from `startEmbedded` (the CLI hands in platform/'s
 *     ensureLocalPlatform), with the user's PLATFORM_API_KEY when set, else the platform's own key.
 *   createPlatformClient({ url, apiKey }): PlatformClient
 *   client.uploadArtifact(appId, { path, sha256, size }, manifest, onBytes?): Promise<{ buildId, skipped, build }>
 *     content-addressed: `skipped` is true when the platform already had the sha256 (no PUT sent).
 *   client.saveEndpoint(input: EndpointInput): Promise<PlatformEndpoint>   (input.id → update)
 *   client.deleteEndpoint(id): Promise<boolean>
 *   client.listEndpoints(): Promise<PlatformEndpoint[]>
 *   client.run(endpoint, input, { webhook?, policy? }): Promise<Job>        endpoint = id or queue URL
 *   client.runsync(endpoint, input, { waitMs?, timeoutMs?, onPending?, policy?, signal? }): Promise<Job>
 *     follows a non-final answer with status-sync/status polls until final; no overall limit by
 *     default; when timeoutMs runs out it resolves with the non-final job (its id kept). A FAILED
 *     job resolves (status "FAILED", `error`), it does not throw.
 *   client.status(endpoint, jobId) / client.cancel(endpoint, jobId): Promise<Job>
 *   client.lbRequest(endpointUrl, method, path, body?): Promise<{ status, headers, body }>
 *     any status but 401 resolves (the caller forwards it); body is parsed JSON or text.
 *
 * Apps and environments: listApps, getApp(name) (null when absent), createApp, deleteApp(id),
 * getEnvironment(appId, name), createEnvironment, listEnvironments(appName), deleteEnvironment(id);
 * builds: getBuild(id), deployBuildToEnvironment(envId, buildId), setBuildEndpointUrls(buildId, urls);
 * workerLogs(endpointId, limit?); secrets: listSecrets() (names only), createSecret(name, value),
 * deleteSecret(name). The deploy environment rules are in ./environments.ts.
 */
import { APPS_REMEDY, errors } from "../errors.ts";
import { createGraphQLRunner, documents, type GraphQLRunner } from "./_graphql.ts";
import { httpRequest } from "./_http.ts";
import { createQueueApi } from "./queue.ts";
import { trimUrl } from "./resolve.ts";
import type { EndpointInput, LbResponse, PlatformApp, PlatformBuild, PlatformEndpoint, PlatformEnvironment, PlatformSecret, UploadResult } from "./types.ts";
import { uploadArtifact, type ArtifactRef } from "./upload.ts";
import { createVolumesApi } from "./volumes.ts";

export * from "./types.ts";
export { resolvePlatform, type ResolvedPlatform, type ResolveOptions, type StartEmbedded, type EmbeddedPlatform } from "./resolve.ts";
export { planEnvironment, resolveDeployTarget, findEnvironment, checkEnvironmentName, DEFAULT_ENVIRONMENT, PLATFORM_NAME, type EnvironmentPlan, type ResolvedTarget } from "./environments.ts";
export { queueUrl } from "./queue.ts";
export { runShell, exitCodeOf, type ShellOptions } from "./shell.ts";
export { jobErrorView, type JobErrorView } from "./job-error.ts";
export type { ArtifactRef } from "./upload.ts";
export type { PlatformVolume, S3Access } from "./volumes.ts";

export interface PlatformClientOptions {
  url: string;
  apiKey: string;
}

export function createPlatformClient(options: PlatformClientOptions) {
  const url = trimUrl(options.url);
  const { apiKey } = options;
  const gql = createGraphQLRunner(url, apiKey);
  const queue = createQueueApi(url, apiKey);
  const apps = appsApi(gql);

  return {
    url,
    apiKey,
    /** Raw GraphQL, for operations this client has no method for. */
    graphql: gql,
    ...secretsApi(gql),
    ...apps,
    ...environmentsApi(gql, apps.getApp),
    ...endpointsApi(gql),
    ...buildsApi(url, apiKey, gql),
    // network volumes (docs/volumes.md)
    ...createVolumesApi(gql),
    // queue routes
    run: queue.run,
    runsync: queue.runsync,
    status: queue.status,
    cancel: queue.cancel,
    lbRequest: lbRequester(url, apiKey),
  };
}

/** Secrets: a value goes in once and never comes back (docs/platform.md, "Secrets"). */
function secretsApi(gql: GraphQLRunner) {
  return {
    async listSecrets(): Promise<PlatformSecret[]> {
      return (await gql<{ myself: { secrets: PlatformSecret[] } }>("secrets", documents.secrets)).myself.secrets;
    },
    async createSecret(name: string, value: string): Promise<PlatformSecret> {
      return (await gql<{ secretCreate: PlatformSecret }>("secretCreate", documents.secretCreate, { input: { name, value } })).secretCreate;
    },
    async deleteSecret(name: string): Promise<boolean> {
      return (await gql<{ secretDelete: boolean }>("secretDelete", documents.secretDelete, { name })).secretDelete;
    },
  };
}

function appsApi(gql: GraphQLRunner) {
  return {
    async listApps(): Promise<PlatformApp[]> {
      return (await gql<{ apps: PlatformApp[] }>("apps", documents.apps)).apps;
    },
    async getApp(name: string): Promise<PlatformApp | null> {
      return (await gql<{ app: PlatformApp | null }>("app", documents.app, { name })).app;
    },
    async createApp(name: string): Promise<PlatformApp> {
      return (await gql<{ createApp: PlatformApp }>("createApp", documents.createApp, { name })).createApp;
    },
    async deleteApp(id: string): Promise<boolean> {
      return (await gql<{ deleteApp: boolean }>("deleteApp", documents.deleteApp, { id })).deleteApp;
    },
  };
}

function environmentsApi(gql: GraphQLRunner, getApp: (name: string) => Promise<PlatformApp | null>) {
  return {
    async getEnvironment(appId: string, name: string): Promise<PlatformEnvironment | null> {
      return (await gql<{ environment: PlatformEnvironment | null }>("environment", documents.environment, { appId, name })).environment;
    },
    async createEnvironment(appId: string, name: string): Promise<PlatformEnvironment> {
      return (await gql<{ createEnvironment: PlatformEnvironment }>("createEnvironment", documents.createEnvironment, { appId, name })).createEnvironment;
    },
    /** Environments of the app named `appName`; NOT_FOUND when there is no such app. */
    async listEnvironments(appName: string): Promise<PlatformEnvironment[]> {
      const app = await getApp(appName);
      if (!app) throw errors.NOT_FOUND("App", appName, APPS_REMEDY);
      return app.environments;
    },
    async deleteEnvironment(id: string): Promise<boolean> {
      return (await gql<{ deleteEnvironment: boolean }>("deleteEnvironment", documents.deleteEnvironment, { id })).deleteEnvironment;
    },
  };
}

function endpointsApi(gql: GraphQLRunner) {
  return {
    async listEndpoints(): Promise<PlatformEndpoint[]> {
      return (await gql<{ myself: { endpoints: PlatformEndpoint[] } }>("myself", documents.myselfEndpoints)).myself.endpoints;
    },
    async getEndpoint(id: string): Promise<PlatformEndpoint | null> {
      return (await gql<{ myself: { endpoint: PlatformEndpoint | null } }>("myself", documents.myselfEndpoint, { id })).myself.endpoint;
    },
    async saveEndpoint(input: EndpointInput): Promise<PlatformEndpoint> {
      return (await gql<{ saveEndpoint: PlatformEndpoint }>("saveEndpoint", documents.saveEndpoint, { input })).saveEndpoint;
    },
    async deleteEndpoint(id: string): Promise<boolean> {
      return (await gql<{ deleteEndpoint: boolean }>("deleteEndpoint", documents.deleteEndpoint, { id })).deleteEndpoint;
    },
  };
}

/** Builds: the content-addressed upload, switching an environment to a build, its URLs and worker logs. */
function buildsApi(url: string, apiKey: string, gql: GraphQLRunner) {
  return {
    uploadArtifact(appId: string, artifact: ArtifactRef, manifest: unknown, onBytes?: (bytes: number) => void): Promise<UploadResult> {
      return uploadArtifact(url, apiKey, gql, appId, artifact, manifest, onBytes);
    },
    async getBuild(id: string): Promise<PlatformBuild | null> {
      return (await gql<{ getBuild: PlatformBuild | null }>("getBuild", documents.getBuild, { id })).getBuild;
    },
    async deployBuildToEnvironment(environmentId: string, buildId: string): Promise<PlatformEnvironment> {
      return (await gql<{ deployBuildToEnvironment: PlatformEnvironment }>("deployBuildToEnvironment", documents.deployBuildToEnvironment, { environmentId, buildId }))
        .deployBuildToEnvironment;
    },
    async setBuildEndpointUrls(buildId: string, urls: Record<string, string>): Promise<PlatformBuild> {
      return (await gql<{ setBuildEndpointUrls: PlatformBuild }>("setBuildEndpointUrls", documents.setBuildEndpointUrls, { buildId, urls })).setBuildEndpointUrls;
    },
    async workerLogs(endpointId: string, limit?: number): Promise<string[]> {
      return (await gql<{ workerLogs: string[] }>("workerLogs", documents.workerLogs, { endpointId, limit })).workerLogs;
    },
  };
}

/** One request to a load-balanced endpoint's route: `{endpointUrl}{path}`. */
function lbRequester(url: string, apiKey: string) {
  return async function lbRequest(endpointUrl: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<LbResponse> {
    const target = `${trimUrl(endpointUrl)}${path.startsWith("/") ? path : `/${path}`}`;
    const hasBody = body !== undefined && !["GET", "HEAD"].includes(method.toUpperCase());
    const response = await httpRequest(url, target, {
      method: method.toUpperCase(),
      headers: {
        authorization: `Bearer ${apiKey}`,
        accept: "application/json",
        ...(hasBody ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      body: hasBody ? (typeof body === "string" ? body : JSON.stringify(body)) : undefined,
    });
    return { status: response.status, headers: response.headers, body: response.json !== undefined ? response.json : response.text };
  };
}

export type PlatformClient = ReturnType<typeof createPlatformClient>;
