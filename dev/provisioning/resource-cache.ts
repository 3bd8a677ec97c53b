/**
 * The dev server's resource cache: every `live-` endpoint it deployed, with a hash of the
 * endpoint's configuration, so a restart recognises them (equal hash: reuse; changed hash: update;
 * gone from the platform: re-create) and a crashed run's endpoints are not left behind.
 *
 * The spec names the file `.platform/resources.pkl`; svc writes JSON into it (there is no Python
 * pickle on this side), with a version field so the format can change.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { EndpointInput } from "../../core/client/index.ts";

export const RESOURCE_CACHE_FILE = join(".platform", "resources.pkl");

export interface CachedResource {
  /** Endpoint name in the app (`hello`). */
  endpoint: string;
  /** Name on the platform (`live-hello`). */
  name: string;
  id: string;
  type: "QB" | "LB";
  url: string;
  /** sha256 of the endpoint's configuration, runtime-only fields left out. */
  configHash: string;
  buildId?: string;
  /** The platform this endpoint lives on: entries for another platform are left alone. */
  platformUrl: string;
  updatedAt: string;
}

export interface ResourceCache {
  version: 1;
  resources: Record<string, CachedResource>;
}

const cacheKey = (platformUrl: string, endpoint: string) => `${platformUrl.replace(/\/+$/, "")} ${endpoint}`;

export function emptyCache(): ResourceCache {
  return { version: 1, resources: {} };
}

export async function readResourceCache(root: string): Promise<ResourceCache> {
  try {
    const parsed = JSON.parse(await readFile(join(root, RESOURCE_CACHE_FILE), "utf8")) as ResourceCache;
    if (parsed?.version !== 1 || typeof parsed.resources !== "object" || parsed.resources === null) return emptyCache();
    return parsed;
  } catch {
    // Missing or unreadable (an older pickle, a half-written file): start afresh.
    return emptyCache();
  }
}

export async function writeResourceCache(root: string, cache: ResourceCache): Promise<void> {
  const file = join(root, RESOURCE_CACHE_FILE);
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(cache, null, 2)}\n`);
  await rename(tmp, file);
}

export function getCached(cache: ResourceCache, platformUrl: string, endpoint: string): CachedResource | undefined {
  return cache.resources[cacheKey(platformUrl, endpoint)];
}

export function putCached(cache: ResourceCache, entry: CachedResource): void {
  cache.resources[cacheKey(entry.platformUrl, entry.endpoint)] = entry;
}

export function dropCached(cache: ResourceCache, platformUrl: string, endpoint: string): void {
  delete cache.resources[cacheKey(platformUrl, endpoint)];
}

export function cachedFor(cache: ResourceCache, platformUrl: string): CachedResource[] {
  const base = platformUrl.replace(/\/+$/, "");
  return Object.values(cache.resources).filter((entry) => entry.platformUrl.replace(/\/+$/, "") === base);
}

/**
 * One dev server's part of the cache file: the entries of its platform, read when it starts and
 * written after each change, one write at a time, each of the state when it was asked for.
 */
export class PlatformResources {
  private cache: ResourceCache = emptyCache();
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly root: string,
    private readonly platformUrl: string,
  ) {}

  async load(): Promise<void> {
    this.cache = await readResourceCache(this.root);
  }

  /** This platform's entries. */
  entries(): CachedResource[] {
    return cachedFor(this.cache, this.platformUrl);
  }

  get(endpoint: string): CachedResource | undefined {
    return getCached(this.cache, this.platformUrl, endpoint);
  }

  put(entry: CachedResource): void {
    putCached(this.cache, entry);
  }

  drop(endpoint: string): void {
    dropCached(this.cache, this.platformUrl, endpoint);
  }

  save(): Promise<void> {
    const snapshot = JSON.parse(JSON.stringify(this.cache)) as ResourceCache;
    this.writing = this.writing.catch(() => {}).then(() => writeResourceCache(this.root, snapshot));
    return this.writing;
  }
}

/** JSON with sorted keys: the same configuration always hashes the same. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * Hash of an endpoint's configuration: what `saveEndpoint` sends, without the runtime-only fields
 * (id, buildId, environmentId: the build changes on every code edit and is applied separately).
 */
export function configHash(input: EndpointInput): string {
  const { id: _id, buildId: _buildId, environmentId: _environmentId, ...config } = input;
  return `sha256:${createHash("sha256").update(stableStringify(config)).digest("hex")}`;
}

export type PlanAction =
  | { action: "create"; endpoint: string; hash: string }
  | { action: "reuse"; endpoint: string; hash: string; cached: CachedResource }
  | { action: "update"; endpoint: string; hash: string; cached: CachedResource };

/**
 * What to do for each endpoint, given the cache and the ids the platform still has:
 * no entry or gone → create; equal hash → reuse; changed hash → update.
 */
export function planResources(
  endpoints: Array<{ endpoint: string; hash: string }>,
  cached: (endpoint: string) => CachedResource | undefined,
  existingIds: Set<string>,
): PlanAction[] {
  return endpoints.map(({ endpoint, hash }) => {
    const entry = cached(endpoint);
    if (!entry || !existingIds.has(entry.id)) return { action: "create", endpoint, hash };
    if (entry.configHash === hash) return { action: "reuse", endpoint, hash, cached: entry };
    return { action: "update", endpoint, hash, cached: entry };
  });
}
