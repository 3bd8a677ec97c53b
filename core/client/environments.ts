/**
 * Which app environment a deploy goes to (reference/platform-api.md section 6):
 * no app yet → create it and the `--env` environment (default `production`); `--env` unknown →
 * create it; exactly one environment → use it; several and no `--env` → ENVIRONMENT_AMBIGUOUS.
 */
import { APPS_REMEDY, ENVIRONMENTS_REMEDY, errors } from "../errors.ts";
import type { PlatformApp, PlatformEnvironment } from "./types.ts";

/** The part of the platform client (core/client/index.ts) these rules use. */
export interface AppsClient {
  getApp(name: string): Promise<PlatformApp | null>;
  createApp(name: string): Promise<PlatformApp>;
  createEnvironment(appId: string, name: string): Promise<PlatformEnvironment>;
}

export const DEFAULT_ENVIRONMENT = "production";

/** Name prefix of the dev server's endpoints (`svc run`): they belong to no environment, and a deploy's clean-up leaves them alone. */
export const LIVE_PREFIX = "live-";

/** What the platform takes as an app or environment name (the embedded platform checks the same: platform/graphql/inputs.ts). */
export const PLATFORM_NAME = { pattern: /^[A-Za-z0-9][A-Za-z0-9._-]*$/, max: 191 } as const;

/** An `--env` the platform would refuse fails here, before any build: ENVIRONMENT_NAME_INVALID. */
export function checkEnvironmentName(name: string | undefined): void {
  if (name !== undefined && (name.length > PLATFORM_NAME.max || !PLATFORM_NAME.pattern.test(name)))
    throw errors.ENVIRONMENT_NAME_INVALID(name, PLATFORM_NAME.max);
}

export type EnvironmentPlan =
  | { action: "create-app"; environment: string }
  | { action: "create-environment"; environment: string }
  | { action: "use"; environment: string };

/** The rules as a pure function of what exists. Throws ENVIRONMENT_NAME_INVALID, ENVIRONMENT_AMBIGUOUS. */
export function planEnvironment(appName: string, app: { environments: { name: string }[] } | null | undefined, requested?: string): EnvironmentPlan {
  checkEnvironmentName(requested);
  if (!app) return { action: "create-app", environment: requested ?? DEFAULT_ENVIRONMENT };
  const names = app.environments.map((env) => env.name);
  if (requested) return names.includes(requested) ? { action: "use", environment: requested } : { action: "create-environment", environment: requested };
  if (names.length === 1) return { action: "use", environment: names[0]! };
  if (names.length === 0) return { action: "create-environment", environment: DEFAULT_ENVIRONMENT };
  throw errors.ENVIRONMENT_AMBIGUOUS(appName, names);
}

export interface ResolvedTarget {
  app: PlatformApp;
  environment: PlatformEnvironment;
  createdApp: boolean;
  createdEnvironment: boolean;
}

/** Applies the plan against the platform (creating what it says to create). */
export async function resolveDeployTarget(client: AppsClient, appName: string, requested?: string): Promise<ResolvedTarget> {
  let app = await client.getApp(appName);
  const plan = planEnvironment(appName, app, requested);
  let createdApp = false;
  if (!app) {
    app = await client.createApp(appName);
    createdApp = true;
  }
  let environment = app.environments.find((env) => env.name === plan.environment);
  let createdEnvironment = false;
  if (!environment) {
    environment = await client.createEnvironment(app.id, plan.environment);
    createdEnvironment = true;
    app = { ...app, environments: [...app.environments, environment] };
  }
  return { app, environment, createdApp, createdEnvironment };
}

/**
 * For commands that act on an existing environment (undeploy, status): the same rules without
 * creating anything. Missing app or environment → NOT_FOUND.
 */
export async function findEnvironment(
  client: Pick<AppsClient, "getApp">,
  appName: string,
  requested?: string,
): Promise<{ app: PlatformApp; environment: PlatformEnvironment }> {
  const app = await client.getApp(appName);
  if (!app) throw errors.NOT_FOUND("App", appName, APPS_REMEDY);
  const plan = planEnvironment(appName, app, requested);
  const environment = app.environments.find((env) => env.name === plan.environment);
  if (!environment) throw errors.NOT_FOUND(`Environment of app "${appName}"`, plan.environment, ENVIRONMENTS_REMEDY);
  return { app, environment };
}
