/**
 * The platform client: one object per platform (hosted or embedded — same API), REST and GraphQL
 * (`{url}/graphql`, one JSON POST per operation) on node:http(s) (./http.ts). Every failure is an SvcError of core/errors.ts:
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
 *
 * PlatformClient's methods are declared below, one interface per family (secrets, apps,
 * environments, endpoints, builds; volumes in ./volumes.ts, the queue routes in ./queue.ts: runsync
 * follows a non-final answer with polls and resolves a FAILED job rather than throwing). The deploy
 * environment rules are in ./environments.ts.
 */
import { APPS_REMEDY, errors } from "../errors.ts";
import { createGraphQLRunner, documents, type GraphQLRunner } from "./_graphql.ts";
import { httpRequest } from "./http.ts";
import { createQueueApi, type QueueApi } from "./queue.ts";
import { trimUrl } from "./resolve.ts";
import type { EndpointInput, LbResponse, PlatformApp, PlatformBuild, PlatformEndpoint, PlatformEnvironment, PlatformSecret, UploadResult } from "./types.ts";
import { uploadArtifact, type ArtifactRef } from "./upload.ts";
import { createVolumesApi, type VolumesApi } from "./volumes.ts";

export * from "./types.ts";
export { resolvePlatform, type ResolvedPlatform, type ResolveOptions, type StartEmbedded, type EmbeddedPlatform } from "./resolve.ts";
export {
  planEnvironment,
  resolveDeployTarget,
  findEnvironment,
  checkEnvironmentName,
  DEFAULT_ENVIRONMENT,
  LIVE_PREFIX,
  PLATFORM_NAME,
  type EnvironmentPlan,
  type ResolvedTarget,
} from "./environments.ts";
export { queueUrl } from "./queue.ts";
export { runShell, exitCodeOf, type ShellOptions } from "./shell.ts";
export { jobErrorView, type JobErrorView } from "./job-error.ts";
export type { ArtifactRef } from "./upload.ts";
export type { PlatformVolume, S3Access, VolumesApi } from "./volumes.ts";
export type { QueueApi } from "./queue.ts";
export type { GraphQLRunner } from "./_graphql.ts";

export interface PlatformClientOptions {
  url: string;
  apiKey: string;
}

/** One platform's API (hosted or embedded): the signatures above, one interface per family. */
export interface PlatformClient extends SecretsApi, AppsApi, EnvironmentsApi, EndpointsApi, BuildsApi, VolumesApi, QueueApi {
  url: string;
  apiKey: string;
  /** Raw GraphQL, for operations this client has no method for. */
  graphql: GraphQLRunner;
  /** One request to a load-balanced endpoint's route (`{endpointUrl}{path}`): any status but 401 resolves; body is parsed JSON or text. */
  lbRequest(endpointUrl: string, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<LbResponse>;
}

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const url = trimUrl(options.url);
  const { apiKey } = options;
  const gql = createGraphQLRunner(url, apiKey);
  const queue = createQueueApi(url, apiKey);
  const apps = appsApi(gql);

  return {
    url,
    apiKey,
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
export interface SecretsApi {
  /** Names only. */
  listSecrets(): Promise<PlatformSecret[]>;
  createSecret(name: string, value: string): Promise<PlatformSecret>;
  deleteSecret(name: string): Promise<boolean>;
}

function secretsApi(gql: GraphQLRunner): SecretsApi {
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

export interface AppsApi {
  listApps(): Promise<PlatformApp[]>;
  /** null when there is no app of that name. */
  getApp(name: string): Promise<PlatformApp | null>;
  createApp(name: string): Promise<PlatformApp>;
  deleteApp(id: string): Promise<boolean>;
}

function appsApi(gql: GraphQLRunner): AppsApi {
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

/** An app's environments (the deploy's rules: ./environments.ts). */
export interface EnvironmentsApi {
  getEnvironment(appId: string, name: string): Promise<PlatformEnvironment | null>;
  createEnvironment(appId: string, name: string): Promise<PlatformEnvironment>;
  /** Environments of the app named `appName`; NOT_FOUND when there is no such app. */
  listEnvironments(appName: string): Promise<PlatformEnvironment[]>;
  deleteEnvironment(id: string): Promise<boolean>;
}

function environmentsApi(gql: GraphQLRunner, getApp: (name: string) => Promise<PlatformApp | null>): EnvironmentsApi {
  return {
    async getEnvironment(appId: string, name: string): Promise<PlatformEnvironment | null> {
      return (await gql<{ environment: PlatformEnvironment | null }>("environment", documents.environment, { appId, name })).environment;
    },
    async createEnvironment(appId: string, name: string): Promise<PlatformEnvironment> {
      return (await gql<{ createEnvironment: PlatformEnvironment }>("createEnvironment", documents.createEnvironment, { appId, name })).createEnvironment;
    },
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

export interface EndpointsApi {
  listEndpoints(): Promise<PlatformEndpoint[]>;
  getEndpoint(id: string): Promise<PlatformEndpoint | null>;
  /** Creates the endpoint, or updates the one `input.id` names. */
  saveEndpoint(input: EndpointInput): Promise<PlatformEndpoint>;
  deleteEndpoint(id: string): Promise<boolean>;
}

function endpointsApi(gql: GraphQLRunner): EndpointsApi {
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
export interface BuildsApi {
  /** Content-addressed: `skipped` is true when the platform already had the sha256 (no PUT sent). */
  uploadArtifact(appId: string, artifact: ArtifactRef, manifest: unknown, onBytes?: (bytes: number) => void): Promise<UploadResult>;
  getBuild(id: string): Promise<PlatformBuild | null>;
  deployBuildToEnvironment(environmentId: string, buildId: string): Promise<PlatformEnvironment>;
  setBuildEndpointUrls(buildId: string, urls: Record<string, string>): Promise<PlatformBuild>;
  workerLogs(endpointId: string, limit?: number): Promise<string[]>;
}

function buildsApi(url: string, apiKey: string, gql: GraphQLRunner): BuildsApi {
  return {
    uploadArtifact(appId: string, artifact: ArtifactRef, manifest: unknown, onBytes?: (bytes: number) => void): Promise<UploadResult> {
      return uploadArtifact(url, apiKey, gql, appId, artifact, manifest, onBytes);
    },
    async getBuild(id: string): Promise<PlatformBuild | null> {
      return (await gql<{ getBuild: PlatformBuild | null }>("getBuild", documents.getBuild, { id })).getBuild;
    },
    async deployBuildToEnvironment(environmentId: string, buildId: string): Promise<PlatformEnvironment> {
      return (
        await gql<{ deployBuildToEnvironment: PlatformEnvironment }>("deployBuildToEnvironment", documents.deployBuildToEnvironment, { environmentId, buildId })
      ).deployBuildToEnvironment;
    },
    async setBuildEndpointUrls(buildId: string, urls: Record<string, string>): Promise<PlatformBuild> {
      return (await gql<{ setBuildEndpointUrls: PlatformBuild }>("setBuildEndpointUrls", documents.setBuildEndpointUrls, { buildId, urls }))
        .setBuildEndpointUrls;
    },
    async workerLogs(endpointId: string, limit?: number): Promise<string[]> {
      return (await gql<{ workerLogs: string[] }>("workerLogs", documents.workerLogs, { endpointId, limit })).workerLogs;
    },
  };
}

function lbRequester(url: string, apiKey: string): PlatformClient["lbRequest"] {
  return async function lbRequest(
    endpointUrl: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<LbResponse> {
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
