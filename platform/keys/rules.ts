/**
 * The one table of who may call what (docs/platform.md, "Keys and roles"): every HTTP route the
 * platform serves and every GraphQL field, with the roles that may call it and what names the app
 * it acts on (so a key scoped to an app, or to one environment of it, reaches that app only).
 * api/app.ts and api/hot-routes.ts check routes by it, api/graphql.ts checks each field of an
 * operation by it; test/platform/keys.test.ts fails when a registered route or a schema field has
 * no row here. Admin is in every row but `none`/`self`: it may do everything, keys included.
 */
export const ROLES = ["admin", "deploy", "invoke", "read"] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a call acts on, and so which scope it needs:
 * endpoint (the route's :endpoint, the load-balancer host's, or the field's endpoint id argument),
 * file (an output file's endpoint), app-name / app-id / environment / build / upload (the field's
 * argument of that kind), endpoint-input (saveEndpoint's input: the endpoint it updates, else its
 * environment or build), filtered (a list: the answer holds only what the scope reaches), shared
 * (the same for every app: any scope), platform (platform-wide: only a key of no scope).
 */
export type Target = "endpoint" | "file" | "app-name" | "app-id" | "environment" | "build" | "upload" | "endpoint-input" | "filtered" | "shared" | "platform";

export interface Rule {
  /** The roles that may call it; "none": no key is asked; "self": the route checks its own token (a worker's, an upload's, S3's signature). */
  roles: readonly Role[] | "none" | "self";
  on: Target;
  /** The argument that names the target (GraphQL fields). */
  arg?: string;
}

const ADMIN: readonly Role[] = ["admin"];
const DEPLOY: readonly Role[] = ["admin", "deploy"];
const READ: readonly Role[] = ["admin", "deploy", "read"];
const INVOKE: readonly Role[] = ["admin", "deploy", "invoke"];
const INVOKE_OR_READ: readonly Role[] = ["admin", "deploy", "invoke", "read"];

/** `METHOD /pattern` as h3 registers it (`*`: any method); `* <endpoint>.localhost` is the load balancer by host. */
export const ROUTE_RULES: Readonly<Record<string, Rule>> = {
  "POST /v2/:endpoint/run": { roles: INVOKE, on: "endpoint" },
  "POST /v2/:endpoint/runsync": { roles: INVOKE, on: "endpoint" }, // the hot path (api/hot-routes.ts)
  "GET /v2/:endpoint/status/:job": { roles: INVOKE_OR_READ, on: "endpoint" },
  "GET /v2/:endpoint/status-sync/:job": { roles: INVOKE_OR_READ, on: "endpoint" },
  "GET /v2/:endpoint/stream/:job": { roles: INVOKE_OR_READ, on: "endpoint" },
  "POST /v2/:endpoint/cancel/:job": { roles: INVOKE, on: "endpoint" },
  "GET /v2/:endpoint/cancel/:job": { roles: INVOKE, on: "endpoint" },
  "POST /v2/:endpoint/retry/:job": { roles: INVOKE, on: "endpoint" },
  "POST /v2/:endpoint/purge-queue": { roles: DEPLOY, on: "endpoint" },
  "GET /v2/:endpoint/health": { roles: INVOKE_OR_READ, on: "endpoint" },
  "GET /v2/:endpoint/shell": { roles: DEPLOY, on: "endpoint" }, // an upgrade (api/shell-route.ts)
  "* /lb/:endpoint": { roles: INVOKE, on: "endpoint" },
  "* /lb/:endpoint/**": { roles: INVOKE, on: "endpoint" },
  "* <endpoint>.localhost": { roles: INVOKE, on: "endpoint" },
  "GET /v2/files/:id/:name": { roles: INVOKE_OR_READ, on: "file" },
  "GET /platform/gpus": { roles: READ, on: "shared" },
  "GET /platform/limits": { roles: READ, on: "shared" },
  "GET /platform/cluster": { roles: READ, on: "shared" },
  "GET /metrics": { roles: READ, on: "platform" },
  "GET /console": { roles: "none", on: "shared" }, // the console's static page and assets: no data; that comes from /console/api
  "GET /console/": { roles: "none", on: "shared" },
  "GET /console/assets/console.js": { roles: "none", on: "shared" },
  "GET /console/assets/console.css": { roles: "none", on: "shared" },
  "GET /console/api/session": { roles: READ, on: "platform" },
  "GET /console/api/overview": { roles: READ, on: "platform" },
  "GET /console/api/endpoints/:id": { roles: READ, on: "platform" },
  "GET /console/api/endpoints/:id/jobs": { roles: READ, on: "platform" },
  "GET /console/api/endpoints/:id/logs": { roles: READ, on: "platform" },
  "GET /console/api/endpoints/:id/series": { roles: READ, on: "platform" },
  "GET /console/api/volumes": { roles: READ, on: "platform" },
  "GET /console/api/builds": { roles: READ, on: "platform" },
  "POST /graphql": { roles: INVOKE_OR_READ, on: "shared" }, // and then each field by GRAPHQL_RULES
  "PUT /v2/_artifacts/:key": { roles: "self", on: "upload" },
  "GET /v2/_worker/:worker/job-take": { roles: "self", on: "shared" },
  "POST /v2/_worker/:worker/job-done/:job": { roles: "self", on: "shared" },
  "POST /v2/_worker/:worker/jobs-done": { roles: "self", on: "shared" }, // the hot path
  "POST /v2/_worker/:worker/job-stream/:job": { roles: "self", on: "shared" },
  "GET /v2/_worker/:worker/ping": { roles: "self", on: "shared" },
  "GET /v2/_worker/:worker/signals": { roles: "self", on: "shared" },
  "POST /v2/_worker/:worker/error": { roles: "self", on: "shared" },
  "POST /v2/_worker/:worker/files": { roles: "self", on: "shared" },
  "GET /v2/_worker/:worker/launch": { roles: "self", on: "shared" },
  "GET /v2/_worker/:worker/artifact": { roles: "self", on: "shared" },
  "POST /v2/_worker/:worker/logs": { roles: "self", on: "shared" },
  "GET /v2/_worker/:worker/stock/job-take/:pod": { roles: "self", on: "shared" }, // the stock hosted SDK's worker routes (api/stock-worker-routes.ts)
  "GET /v2/_worker/:worker/stock/job-take-batch/:pod": { roles: "self", on: "shared" },
  "GET /v2/_worker/:worker/stock/job-stop/:pod": { roles: "self", on: "shared" },
  "POST /v2/_worker/:worker/stock/job-done/:job": { roles: "self", on: "shared" },
  "POST /v2/_worker/:worker/stock/job-stream/:job": { roles: "self", on: "shared" },
  "GET /v2/_worker/:worker/stock/ping": { roles: "self", on: "shared" },
  "* /s3/**": { roles: "self", on: "shared" }, // the volumes' S3 API signs with its own keys (docs/volumes.md)
  "* /**": { roles: INVOKE_OR_READ, on: "shared" }, // no such route: 404
};

/** `Query.<field>` / `Mutation.<field>` of platform/graphql/schema.graphql. */
export const GRAPHQL_RULES: Readonly<Record<string, Rule>> = {
  "Query.myself": { roles: INVOKE_OR_READ, on: "filtered" },
  "Query.endpoint": { roles: INVOKE_OR_READ, on: "endpoint", arg: "id" },
  "Query.apps": { roles: INVOKE_OR_READ, on: "filtered" },
  "Query.app": { roles: INVOKE_OR_READ, on: "app-name", arg: "name" },
  "Query.environment": { roles: INVOKE_OR_READ, on: "app-id", arg: "appId" },
  "Query.getBuild": { roles: INVOKE_OR_READ, on: "build", arg: "id" },
  "Query.gpuTypes": { roles: INVOKE_OR_READ, on: "shared" },
  "Query.workerLogs": { roles: READ, on: "endpoint", arg: "endpointId" },
  "Query.workerLogLines": { roles: READ, on: "endpoint", arg: "endpointId" },
  "Query.deletedEndpoints": { roles: READ, on: "filtered" },
  "Query.s3Credentials": { roles: DEPLOY, on: "platform" },
  "Query.deployHistory": { roles: READ, on: "environment", arg: "environmentId" },
  "Query.auditLog": { roles: ADMIN, on: "platform" },
  "Query.apiKeys": { roles: ADMIN, on: "platform" },
  "Mutation.saveEndpoint": { roles: DEPLOY, on: "endpoint-input", arg: "input" },
  "Mutation.deleteEndpoint": { roles: DEPLOY, on: "endpoint", arg: "id" },
  "Mutation.updateEndpointTemplate": { roles: DEPLOY, on: "endpoint-input", arg: "input" },
  "Mutation.saveTemplate": { roles: DEPLOY, on: "platform" },
  "Mutation.createApp": { roles: DEPLOY, on: "app-name", arg: "name" },
  "Mutation.deleteApp": { roles: DEPLOY, on: "app-id", arg: "id" },
  "Mutation.createEnvironment": { roles: DEPLOY, on: "app-id", arg: "appId" },
  "Mutation.deleteEnvironment": { roles: DEPLOY, on: "environment", arg: "id" },
  "Mutation.prepareArtifactUpload": { roles: DEPLOY, on: "app-id", arg: "appId" },
  "Mutation.finalizeArtifactUpload": { roles: DEPLOY, on: "upload", arg: "objectKey" },
  "Mutation.deployBuildToEnvironment": { roles: DEPLOY, on: "environment", arg: "environmentId" },
  "Mutation.rollbackEnvironment": { roles: DEPLOY, on: "environment", arg: "environmentId" },
  "Mutation.setBuildEndpointUrls": { roles: DEPLOY, on: "build", arg: "buildId" },
  "Mutation.createNetworkVolume": { roles: DEPLOY, on: "platform" },
  "Mutation.updateNetworkVolume": { roles: DEPLOY, on: "platform" },
  "Mutation.deleteNetworkVolume": { roles: DEPLOY, on: "platform" },
  "Mutation.secretCreate": { roles: DEPLOY, on: "platform" },
  "Mutation.secretDelete": { roles: DEPLOY, on: "platform" },
  "Mutation.apiKeyCreate": { roles: ADMIN, on: "platform" },
  "Mutation.apiKeyRevoke": { roles: ADMIN, on: "platform" },
};
