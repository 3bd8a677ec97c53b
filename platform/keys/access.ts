/**
 * Does a key's role and scope cover a call (./rules.ts)? The target a call acts on is named by app
 * and environment names (a key's scope is kept by name: `svc key create --app A --env E`).
 */
import { errors, type SvcError } from "../../core/errors.ts";
import type { Store } from "../store/index.ts";
import type { Role, Rule, Target } from "./rules.ts";

/** Who holds a key: `keys.verify(secret)` answers it; PLATFORM_API_KEY is PLATFORM_ADMIN. */
export interface Identity {
  name: string;
  role: Role;
  /** Scoped to this app (name), else platform-wide. */
  app?: string;
  /** And to this environment of it. */
  env?: string;
}

export const PLATFORM_ADMIN: Identity = { name: "platform", role: "admin" };

/** The app and environment a call acts on: env undefined for an app-wide call, null for an endpoint outside environments. */
export interface Place {
  app: string;
  env?: string | null;
}

/** "deploy-ci (role deploy, app hello)", for messages. */
export const describeKey = (who: Identity): string =>
  `"${who.name}" (role ${who.role}${who.app ? `, app ${who.app}${who.env ? ` environment ${who.env}` : ""}` : ""})`;

/** Does the key's scope reach this place? A platform-wide key reaches every place. */
export function reaches(who: Identity, place: Place | undefined): boolean {
  if (!who.app) return true;
  if (!place || place.app !== who.app) return false;
  return !who.env || place.env === undefined || place.env === who.env;
}

/** undefined when `who` may make the call (`what`, for the message), else 403 KEY_FORBIDDEN. */
export function refusal(who: Identity, rule: Rule, place: () => Place | undefined, what: string): SvcError | undefined {
  if (rule.roles === "none" || rule.roles === "self") return undefined;
  if (!rule.roles.includes(who.role)) return errors.KEY_FORBIDDEN(describeKey(who), what, `role ${rule.roles.join(" or ")}`);
  if (!who.app || rule.on === "shared" || rule.on === "filtered") return undefined;
  if (rule.on === "platform") return errors.KEY_FORBIDDEN(describeKey(who), what, "a platform-wide key (one created without --app)");
  return reaches(who, place()) ? undefined : errors.KEY_FORBIDDEN(describeKey(who), what, `a key whose scope covers the app it acts on`);
}

/** Where things are: the app and environment of an endpoint, an environment, a build, an upload, an output file. */
export function placeOf(store: Store, on: Target, value: unknown): Place | undefined {
  const id = typeof value === "string" ? value : undefined;
  const appName = (appId: string | undefined) => (appId ? store.apps.get(appId)?.name : undefined);
  const inEnvironment = (envId: string): Place | undefined => {
    const env = store.apps.environment(envId);
    const app = appName(env?.appId);
    return env && app ? { app, env: env.name } : undefined;
  };
  const ofEndpoint = (endpointId: string | undefined): Place | undefined => {
    const endpoint = endpointId ? store.endpoints.get(endpointId) : undefined;
    if (endpoint?.environmentId) return inEnvironment(endpoint.environmentId);
    const deleted = !endpoint && endpointId ? store.logs.retired(endpointId) : undefined; // its logs stay readable a while
    if (deleted?.environmentId) return inEnvironment(deleted.environmentId);
    const app = appName(endpoint?.buildId ? store.builds.get(endpoint.buildId)?.appId : undefined);
    return app ? { app, env: null } : undefined;
  };
  const withApp = (app: string | undefined): Place | undefined => (app ? { app } : undefined);
  switch (on) {
    case "endpoint":
      return ofEndpoint(id);
    case "file":
      return ofEndpoint((id && store.files.get(id)?.endpointId) || undefined);
    case "app-name":
      return withApp(id);
    case "app-id":
      return withApp(appName(id));
    case "environment":
      return id ? inEnvironment(id) : undefined;
    case "build":
      return withApp(appName(id ? store.builds.get(id)?.appId : undefined));
    case "upload":
      return withApp(appName(id ? store.builds.upload(id)?.appId : undefined));
    case "endpoint-input":
      return inputPlace(value, ofEndpoint, inEnvironment, (buildId) => withApp(appName(store.builds.get(buildId)?.appId)));
    default:
      return undefined;
  }
}

/**
 * saveEndpoint's (and updateEndpointTemplate's) input: the endpoint it updates, its environment and
 * its build must all be of one place (else none: a scoped key is refused).
 */
function inputPlace(
  value: unknown,
  ofEndpoint: (id: string) => Place | undefined,
  inEnvironment: (id: string) => Place | undefined,
  ofBuild: (id: string) => Place | undefined,
): Place | undefined {
  const input = (value && typeof value === "object" ? value : {}) as Record<string, unknown>;
  const text = (key: string) => (typeof input[key] === "string" && input[key] !== "" ? (input[key] as string) : undefined);
  const refs: Array<[string | undefined, (id: string) => Place | undefined]> = [
    [text("id") ?? text("endpointId"), ofEndpoint],
    [text("environmentId"), inEnvironment],
    [text("buildId"), ofBuild],
  ];
  const places = refs.filter(([id]) => id !== undefined).map(([id, find]) => find(id!));
  const first = places.find((p) => p?.env !== undefined) ?? places[0];
  const agree = places.every((p) => p && p.app === first?.app && (p.env === undefined || p.env === first.env));
  return agree ? first : undefined;
}
