/**
 * The `live-` endpoints of one dev server: deployed lazily (first call) or all at startup
 * (`--auto-provision`, at most 3 at a time), kept on the current build after each reload, recorded
 * in the resource cache, and deleted when the dev server stops.
 */
import { errors } from "../../core/errors.ts";
import type { Logger, Manifest, ManifestEndpoint } from "../../core/types.ts";
import { LIVE_PREFIX, type PlatformClient } from "../../core/client/index.ts";
import { mapLimit } from "../../core/map-limit.ts";
import { endpointInput as provisionInput, PROVISION_CONCURRENCY, resolveVolumeIds } from "../../plugins/index.ts";
import { configHash, planResources, PlatformResources, type CachedResource, type PlanAction } from "./resource-cache.ts";

/** The platform calls the provisioner makes (a fake in unit tests); listVolumes when an endpoint declares a volume. */
export type ProvisionClient = Pick<PlatformClient, "url" | "saveEndpoint" | "deleteEndpoint"> & Partial<Pick<PlatformClient, "listVolumes">>;

/** What the dev server keeps of a platform endpoint. */
export interface RemoteEndpoint {
  id: string;
  name: string;
  url: string;
  buildId?: string | null;
}

/**
 * The ids of the volumes the manifest's endpoints declare: those svc:volume-refs found in this build
 * (`known`), the platform asked only for the rest (plugins/provision.ts resolveVolumeIds: VOLUME_NOT_FOUND,
 * with `svc volume create`, for one it lacks).
 */
async function resolveVolumes(platform: ProvisionClient, manifest: Manifest, known: Record<string, string>): Promise<Record<string, string>> {
  if (!platform.listVolumes) return known;
  return resolveVolumeIds({ listVolumes: () => platform.listVolumes!() }, Object.values(manifest.endpoints), known);
}

export type EndpointStateName = "lazy" | "provisioning" | "provisioned" | "failed";

interface EndpointState {
  state: EndpointStateName;
  remote?: RemoteEndpoint;
  /** Config hash and build the remote endpoint currently has. */
  hash?: string;
  buildId?: string;
  error?: string;
  pending?: Promise<RemoteEndpoint>;
}

export interface EndpointStatus {
  name: string;
  type: "QB" | "LB";
  state: EndpointStateName;
  platformName: string;
  id?: string;
  url?: string;
  buildId?: string;
  error?: string;
}

export interface ProvisionerOptions {
  root: string;
  platform: ProvisionClient;
  logger: Logger;
  prefix?: string;
  concurrency?: number;
}

export class Provisioner {
  readonly prefix: string;
  private readonly states = new Map<string, EndpointState>();
  private readonly cache: PlatformResources;
  private manifest?: Manifest;
  private buildId?: string;
  /** Number of saveEndpoint calls in flight, and the most seen at once (for tests and the bench). */
  inFlight = 0;
  maxInFlight = 0;

  constructor(private readonly options: ProvisionerOptions) {
    this.prefix = options.prefix ?? LIVE_PREFIX;
    this.cache = new PlatformResources(options.root, options.platform.url);
  }

  /** Volume name → id of the current manifest's endpoints (resolved by init and applyBuild: docs/volumes.md). */
  private volumeIds: Record<string, string> = {};
  private input(endpoint: ManifestEndpoint, options: { prefix: string; buildId?: string }) {
    return provisionInput(endpoint, { ...options, volumeIds: this.volumeIds });
  }

  private get platformUrl() {
    return this.options.platform.url;
  }

  /**
   * Reads the cache and adopts the endpoints of an earlier run that still exist on the platform
   * (a crashed or killed dev server): they count as provisioned and follow the current build.
   * Cached endpoints the app no longer has are deleted; vanished ones are forgotten.
   */
  async init(manifest: Manifest, buildId: string, existing: RemoteEndpoint[], volumeIds: Record<string, string> = {}): Promise<void> {
    this.volumeIds = await resolveVolumes(this.options.platform, manifest, volumeIds);
    this.manifest = manifest;
    this.buildId = buildId;
    await this.cache.load();
    const ids = new Map(existing.map((e) => [e.id, e]));
    for (const entry of this.cache.entries()) {
      const remote = ids.get(entry.id);
      if (!remote) {
        this.cache.drop(entry.endpoint);
        continue;
      }
      if (!manifest.endpoints[entry.endpoint]) {
        await this.deleteRemote(entry.endpoint, entry.id);
        continue;
      }
      this.states.set(entry.endpoint, {
        state: "provisioned",
        remote: { ...remote, url: remote.url || entry.url },
        hash: entry.configHash,
        buildId: entry.buildId ?? remote.buildId ?? undefined,
      });
    }
    await this.cache.save();
  }

  /** Endpoints that would be created or changed by `provisionAll` (for the > 5 confirmation). */
  plan(names: string[] = this.endpointNames()): PlanAction[] {
    const existing = new Set([...this.states.values()].filter((s) => s.remote).map((s) => s.remote!.id));
    return planResources(
      names.map((endpoint) => ({ endpoint, hash: configHash(this.input(this.endpoint(endpoint), { prefix: this.prefix })) })),
      (endpoint) => this.cachedEntry(endpoint),
      existing,
    );
  }

  endpointNames(): string[] {
    return Object.keys(this.manifest?.endpoints ?? {}).sort();
  }

  /** Deploys every endpoint, at most `concurrency` at a time. */
  async provisionAll(names: string[] = this.endpointNames()): Promise<RemoteEndpoint[]> {
    return mapLimit(names, this.options.concurrency ?? PROVISION_CONCURRENCY, (name) => this.ensure(name));
  }

  /** The endpoint's platform side, deploying it first when it is not yet (lazy mode's first call). */
  ensure(name: string): Promise<RemoteEndpoint> {
    const state = this.stateOf(name);
    if (state.pending) return state.pending;
    const endpoint = this.endpoint(name);
    const input = this.input(endpoint, { prefix: this.prefix, buildId: this.buildId });
    const hash = configHash(input);
    if (state.state === "provisioned" && state.remote && state.hash === hash && state.buildId === this.buildId) return Promise.resolve(state.remote);
    const wasProvisioned = state.state === "provisioned";
    state.state = "provisioning";
    const work = (async () => {
      const started = performance.now();
      const id = state.remote?.id;
      const verb = id ? (state.hash === hash ? "updating build of" : "updating") : "deploying";
      this.options.logger.info(`${verb} ${input.name}…`);
      try {
        const remote = await this.save({ ...input, ...(id ? { id } : {}) });
        Object.assign(state, {
          state: "provisioned",
          remote: { ...remote, url: remote.url || state.remote?.url || "" },
          hash,
          buildId: this.buildId,
          error: undefined,
        });
        this.options.logger.info(`${id ? "updated" : "deployed"} ${input.name} (${remote.id}) in ${Math.round(performance.now() - started)} ms`);
        this.cache.put(this.entryFor(name, state));
        await this.cache.save();
        return state.remote!;
      } catch (error) {
        state.state = wasProvisioned && state.remote ? "provisioned" : "failed";
        state.error = (error as Error).message;
        throw error;
      } finally {
        state.pending = undefined;
      }
    })();
    state.pending = work;
    return work;
  }

  /**
   * A new build is ready: provisioned endpoints move to it (saveEndpoint with their id and the new
   * build id, or their new configuration); endpoints the app lost are deleted; new ones stay lazy.
   * Answers what changed, for the reload report.
   */
  async applyBuild(
    manifest: Manifest,
    buildId: string,
    volumeIds: Record<string, string> = {},
  ): Promise<{ updated: string[]; removed: string[]; added: string[] }> {
    const before = new Set(Object.keys(this.manifest?.endpoints ?? {}));
    await Promise.allSettled([...this.states.values()].map((s) => s.pending));
    this.volumeIds = await resolveVolumes(this.options.platform, manifest, volumeIds);
    this.manifest = manifest;
    this.buildId = buildId;
    const removed: string[] = [];
    for (const [name, state] of this.states) {
      if (manifest.endpoints[name]) continue;
      if (state.remote) await this.deleteRemote(name, state.remote.id);
      this.states.delete(name);
      removed.push(name);
    }
    const provisioned = [...this.states].filter(([, s]) => s.state === "provisioned" || (s.state === "failed" && s.remote)).map(([name]) => name);
    const updated: string[] = [];
    await mapLimit(provisioned, this.options.concurrency ?? PROVISION_CONCURRENCY, async (name) => {
      const state = this.states.get(name)!;
      const input = this.input(this.endpoint(name), { prefix: this.prefix, buildId });
      if (state.hash === configHash(input) && state.buildId === buildId) return;
      await this.ensure(name);
      updated.push(name);
    });
    const added = Object.keys(manifest.endpoints).filter((name) => !before.has(name));
    await this.cache.save();
    return { updated: updated.sort(), removed: removed.sort(), added: added.sort() };
  }

  /** Deletes every `live-` endpoint this dev server knows of and clears their cache entries. */
  async teardown(): Promise<string[]> {
    await Promise.allSettled([...this.states.values()].map((s) => s.pending));
    const deleted: string[] = [];
    await mapLimit([...this.states], this.options.concurrency ?? PROVISION_CONCURRENCY, async ([name, state]) => {
      if (!state.remote) return;
      await this.deleteRemote(name, state.remote.id).catch((error: Error) => {
        this.options.logger.warn(`could not delete ${this.prefix}${name} (${state.remote!.id}): ${error.message}`);
      });
      deleted.push(`${this.prefix}${name}`);
      state.state = "lazy";
      state.remote = undefined;
    });
    await this.cache.save();
    return deleted.sort();
  }

  status(): EndpointStatus[] {
    return this.endpointNames().map((name) => {
      const endpoint = this.endpoint(name);
      const state = this.states.get(name);
      return {
        name,
        type: endpoint.type,
        state: state?.state ?? "lazy",
        platformName: `${this.prefix}${name}`,
        ...(state?.remote ? { id: state.remote.id, url: state.remote.url } : {}),
        ...(state?.buildId ? { buildId: state.buildId } : {}),
        ...(state?.error && state.state === "failed" ? { error: state.error } : {}),
      };
    });
  }

  remoteOf(name: string): RemoteEndpoint | undefined {
    return this.states.get(name)?.remote;
  }

  /** Platform URLs of the provisioned endpoints (name → URL), for the build's manifest. */
  urls(): Record<string, string> {
    const urls: Record<string, string> = {};
    for (const [name, state] of this.states) if (state.remote?.url) urls[name] = state.remote.url;
    return urls;
  }

  private endpoint(name: string): ManifestEndpoint {
    const endpoint = this.manifest?.endpoints[name];
    if (!endpoint) throw errors.NOT_FOUND("Endpoint", name);
    return endpoint;
  }

  private stateOf(name: string): EndpointState {
    let state = this.states.get(name);
    if (!state) this.states.set(name, (state = { state: "lazy" }));
    return state;
  }

  private cachedEntry(name: string): CachedResource | undefined {
    const state = this.states.get(name);
    if (state?.remote) return this.entryFor(name, state);
    return this.cache.get(name);
  }

  private entryFor(name: string, state: EndpointState): CachedResource {
    return {
      endpoint: name,
      name: `${this.prefix}${name}`,
      id: state.remote!.id,
      type: this.manifest?.endpoints[name]?.type ?? "QB",
      url: state.remote!.url,
      configHash: state.hash ?? "",
      ...(state.buildId ? { buildId: state.buildId } : {}),
      platformUrl: this.platformUrl,
      updatedAt: new Date().toISOString(),
    };
  }

  private async save(input: Parameters<ProvisionClient["saveEndpoint"]>[0]): Promise<RemoteEndpoint> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const saved = await this.options.platform.saveEndpoint(input);
      return { id: saved.id, name: saved.name, url: saved.url, buildId: saved.buildId };
    } finally {
      this.inFlight--;
    }
  }

  private async deleteRemote(name: string, id: string): Promise<void> {
    await this.options.platform.deleteEndpoint(id);
    this.cache.drop(name);
    this.options.logger.info(`deleted ${this.prefix}${name} (${id})`);
  }
}
