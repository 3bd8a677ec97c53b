/**
 * Worker keys: a worker never holds the platform's key. Its `PLATFORM_API_KEY` is scoped to its
 * own app and environment: the queue routes (run, runsync, status, stream, cancel, health) of that
 * environment's endpoints, and GraphQL's getBuild of its app's builds (a cross-endpoint call reads
 * the endpoint URLs in its build's manifest). Endpoints outside an environment (`svc run`'s
 * `live-` ones) share a scope per app; an endpoint with neither is a scope of its own.
 * A key is `svcw.<kind>.<id>.<HMAC-SHA256 of kind and id under the platform's key>`: nothing is
 * stored, and it stays valid across worker restarts. docs/platform.md, "Threat model".
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Store } from "./store/index.ts";
import type { EndpointRecord } from "./store/endpoints.ts";

export type ScopeKind = "env" | "app" | "ep";
export interface KeyScope {
  kind: ScopeKind;
  id: string;
}

/** The routes of `/v2/<endpoint>/<route>` a worker key reaches. */
export const SCOPED_QUEUE_ROUTES: ReadonlySet<string> = new Set(["run", "runsync", "status", "status-sync", "stream", "cancel", "health"]);

const PREFIX = "svcw.";

export interface WorkerKeys {
  /** The key a worker of this endpoint gets. */
  keyFor(endpoint: EndpointRecord): string;
  /** The scope of a worker key; undefined for anything else (a wrong or forged key). */
  verify(key: string | undefined): KeyScope | undefined;
  /** May this scope call the queue routes of this endpoint? */
  reachesEndpoint(scope: KeyScope, endpointId: string): boolean;
  /** May this scope read this build (getBuild)? */
  readsBuild(scope: KeyScope, buildId: string): boolean;
  /** "environment production of app hello", for error messages. */
  describe(scope: KeyScope): string;
}

export function createWorkerKeys(platformKey: string, store: Store): WorkerKeys {
  const mac = (kind: ScopeKind, id: string) => createHmac("sha256", platformKey).update(`worker-key\0${kind}\0${id}`).digest();
  const appOfBuild = (buildId: string | null) => (buildId ? store.builds.get(buildId)?.appId : undefined);

  const scopeOf = (endpoint: EndpointRecord): KeyScope => {
    if (endpoint.environmentId) return { kind: "env", id: endpoint.environmentId };
    const appId = appOfBuild(endpoint.buildId);
    return appId ? { kind: "app", id: appId } : { kind: "ep", id: endpoint.id };
  };
  const appOfScope = (scope: KeyScope): string | undefined =>
    scope.kind === "app" ? scope.id : scope.kind === "env" ? store.apps.environment(scope.id)?.appId : undefined;

  return {
    keyFor(endpoint) {
      const scope = scopeOf(endpoint);
      return `${PREFIX}${scope.kind}.${scope.id}.${mac(scope.kind, scope.id).toString("base64url")}`;
    },
    verify(key) {
      if (!key?.startsWith(PREFIX)) return undefined;
      const [kind, id, presented, ...rest] = key.slice(PREFIX.length).split(".");
      if (rest.length > 0 || !id || !presented || (kind !== "env" && kind !== "app" && kind !== "ep")) return undefined;
      const expected = mac(kind, id);
      const given = Buffer.from(presented, "base64url");
      return given.length === expected.length && timingSafeEqual(given, expected) ? { kind, id } : undefined;
    },
    reachesEndpoint(scope, endpointId) {
      const endpoint = store.endpoints.get(endpointId);
      if (!endpoint) return false;
      const theirs = scopeOf(endpoint);
      return theirs.kind === scope.kind && theirs.id === scope.id;
    },
    readsBuild(scope, buildId) {
      const build = store.builds.get(buildId);
      if (!build) return false;
      if (scope.kind === "ep") return store.endpoints.get(scope.id)?.buildId === buildId;
      return build.appId === appOfScope(scope);
    },
    describe(scope) {
      if (scope.kind === "ep") return `endpoint ${scope.id}`;
      if (scope.kind === "app") return `the endpoints outside environments (svc run's live- endpoints) of app ${store.apps.get(scope.id)?.name ?? scope.id}`;
      const env = store.apps.environment(scope.id);
      const app = env ? store.apps.get(env.appId) : undefined;
      return env ? `environment ${env.name} of app ${app?.name ?? env.appId}` : `environment ${scope.id}`;
    },
  };
}
