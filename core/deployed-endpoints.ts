/**
 * Where `svc deploy` leaves its deploy state (`.svc/deployments/<environment>.json`: ./deploy-state.ts
 * writes and validates it), and one quick question of it: which endpoint id a deployed endpoint's
 * name stands for. Read as plain JSON, without the state's schema (zod, the manifest's): `svc shell`
 * asks it before it loads the platform client, and goes to the platform when the answer is missing
 * or stale. docs/deploy.md, "Deploy state".
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/** Under `.svc/`. */
export const DEPLOY_STATE_DIR = "deployments";

export interface DeployedEndpointQuery {
  /** The platform's API URL (no trailing slash): a state written against another platform does not answer. */
  platform: string;
  /** The endpoint's name in the app. */
  name: string;
  /** The environment; none: the folder's only deploy state (with several, the platform's rules decide). */
  environment?: string;
  /** The app; none: any. */
  app?: string;
}

/**
 * The id of the endpoint `name` as the project's last deploy to that environment recorded it (its
 * URL is `<platform>/v2/<id>`, or `/lb/<id>` for a load-balanced one); undefined when the state does
 * not say (no deploy from this folder, another platform, several environments and none asked for).
 */
export async function deployedEndpointId(outDir: string, query: DeployedEndpointQuery): Promise<string | undefined> {
  const dir = join(outDir, DEPLOY_STATE_DIR);
  const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith(".json"));
  const file = query.environment !== undefined ? `${query.environment}.json` : names.length === 1 ? names[0] : undefined;
  if (!file || !names.includes(file)) return undefined;
  let state: { app?: unknown; platform?: unknown; urls?: Record<string, unknown> } | null;
  try {
    state = JSON.parse(await readFile(join(dir, file), "utf8"));
  } catch {
    return undefined; // unreadable: the platform answers instead
  }
  if (!state || state.platform !== query.platform || (query.app !== undefined && state.app !== query.app)) return undefined;
  const url = state.urls?.[query.name];
  if (typeof url !== "string" || !url.startsWith(`${query.platform}/`)) return undefined;
  return /^(?:v2|lb)\/([^/?#]+)$/.exec(url.slice(query.platform.length + 1))?.[1];
}
