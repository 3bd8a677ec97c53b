/** Resolvers of endpoints: saveEndpoint (live or staged for a build not yet active), deleteEndpoint, their worker logs. */
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { EndpointRecord } from "../store/index.ts";
import { newId } from "../_ids.ts";
import { deletedEndpoints, workerLogLines } from "./worker-logs.ts";
import { endpointInputSchema, updateEndpointTemplateSchema, parseInput, type EndpointInput } from "./inputs.ts";
import { mustBuild, mustEnvironment, throwError } from "./_lookup.ts";
import type { Views } from "./views.ts";

/** Hooks the resolvers need from the server (deleting an endpoint stops its workers). */
export interface ResolverHooks {
  endpointRemoved(endpointId: string): Promise<void>;
  endpointChanged(endpointId: string): void;
}

/** An endpoint's settings as saveEndpoint answers them: live, or staged for a build not yet active. */
type Saved = { record: EndpointRecord; stagedFor?: string };

export async function removeEndpoint(ctx: PlatformContext, hooks: ResolverHooks, id: string): Promise<boolean> {
  const { store } = ctx;
  const endpoint = store.endpoints.get(id);
  if (!endpoint) return false;
  store.logs.retire(endpoint); // its worker logs stay readable for the retention (workerLogLines)
  store.endpoints.remove(id);
  await hooks.endpointRemoved(id);
  return true;
}

export function endpointResolvers(ctx: PlatformContext, hooks: ResolverHooks, views: Views) {
  const { store } = ctx;
  const savedView = ({ record, stagedFor }: Saved) => ({ ...views.endpointView(record), ...(stagedFor ? { buildId: stagedFor } : {}) });
  const save = (input: unknown) => savedView(saveEndpoint(ctx, hooks, parseInput(endpointInputSchema, input, "endpoint input")));
  return {
    // Asked both at the top level and under `myself` (the hosted SDK uses the latter).
    endpoint: ({ id }: Record<string, unknown>) => {
      const e = store.endpoints.get(String(id));
      return e ? views.endpointView(e) : null;
    },
    workerLogs: ({ endpointId, limit }: Record<string, unknown>) => {
      const id = String(endpointId);
      if (!store.endpoints.get(id) && !store.logs.retired(id)) throw errors.NOT_FOUND("Endpoint", id);
      const n = limit === undefined || limit === null ? 200 : Number(limit);
      if (!Number.isInteger(n) || n < 1 || n > 10_000) throw errors.BAD_REQUEST("limit must be between 1 and 10000");
      store.logs.flush();
      return store.logs.tail(id, n);
    },
    workerLogLines: (args: Record<string, unknown>) => workerLogLines(store, args),
    deletedEndpoints: ({ name }: Record<string, unknown>) => deletedEndpoints(store, name),
    saveEndpoint: ({ input }: Record<string, unknown>) => save(input),
    deleteEndpoint: ({ id }: Record<string, unknown>) => removeEndpoint(ctx, hooks, String(id)),
    updateEndpointTemplate: ({ input }: Record<string, unknown>) => {
      const { endpointId, templateId } = parseInput(updateEndpointTemplateSchema, input, "updateEndpointTemplate input");
      const existing = store.endpoints.get(endpointId) ?? throwError(errors.NOT_FOUND("Endpoint", endpointId));
      return save({ id: existing.id, name: existing.name, templateId });
    },
  };
}

function saveEndpoint(ctx: PlatformContext, hooks: ResolverHooks, input: EndpointInput): Saved {
  const { store } = ctx;
  const existing = input.id ? store.endpoints.get(input.id) : undefined;
  if (input.id && !existing) throw errors.NOT_FOUND("Endpoint", input.id);
  if (input.templateId && !store.templates.get(input.templateId)) throw errors.NOT_FOUND("Template", input.templateId);
  if (input.environmentId) mustEnvironment(store, input.environmentId);
  const build = input.buildId ? mustBuild(store, input.buildId) : undefined;
  if (input.networkVolumeId && !store.volumes.get(input.networkVolumeId)) throw errors.VOLUME_NOT_FOUND(input.networkVolumeId, input.name);
  const record = endpointRecord(input, existing);
  if (record.schedule && record.type === "LB")
    throw errors.BAD_REQUEST(`Invalid endpoint input: schedule needs a queue-based endpoint, "${record.name}" is load-balanced`);
  if (record.workersMin > record.workersMax)
    throw errors.BAD_REQUEST(`Invalid endpoint input: workersMin (${record.workersMin}) exceeds workersMax (${record.workersMax})`);
  const home = record.environmentId ? store.apps.environment(record.environmentId) : undefined;
  if (home && build && build.appId !== home.appId) throw errors.BAD_REQUEST(`Build ${build.id} belongs to another app than environment ${home.name}.`);
  if (!home) record.buildId = input.buildId ?? existing?.buildId ?? null;
  // Settings for a build the environment does not run yet wait for its switch: until then its
  // endpoints go on running the active build with their current settings.
  else if (input.buildId && input.buildId !== home.activeBuildId) {
    store.endpoints.stage(home.id, input.buildId, record);
    return { record, stagedFor: input.buildId };
  }
  store.endpoints.save(record);
  warnIfCapped(ctx, record);
  hooks.endpointChanged(record.id);
  return { record };
}

/** A flavour larger than the machine is capped to it (workers/flavours.ts): said at deploy, in the platform's log and the endpoint's logs (`svc logs`). */
function warnIfCapped(ctx: PlatformContext, record: EndpointRecord): void {
  const { capped } = ctx.supervisor.limitsOf(record);
  if (!capped) return;
  const line = `warning: endpoint ${record.name}: ${capped}. docs/platform.md, "Resources"`;
  ctx.options.log(line);
  ctx.store.logs.append(record.id, "platform", line);
}

/** The record an input makes: what it names over what the endpoint had over the defaults. */
function endpointRecord(input: EndpointInput, existing: EndpointRecord | undefined): EndpointRecord {
  const type = input.type ?? existing?.type ?? "QB";
  const env = input.env ?? existing?.env ?? [];
  const templateEnv = input.template?.env ?? [];
  const mergedEnv = input.template ? [...templateEnv.filter((t) => !env.some((e) => e.key === t.key)), ...env] : env;
  return {
    id: existing?.id ?? newId("ep"),
    name: input.name,
    type,
    gpuIds: input.gpuIds ?? existing?.gpuIds ?? null,
    gpuCount: input.gpuCount ?? existing?.gpuCount ?? null,
    instanceIds: input.instanceIds ?? existing?.instanceIds ?? null,
    workersMin: input.workersMin ?? existing?.workersMin ?? 0,
    workersMax: input.workersMax ?? existing?.workersMax ?? 3,
    idleTimeout: input.idleTimeout ?? existing?.idleTimeout ?? 5,
    scalerType:
      input.scalerType ?? (input.type && existing?.type !== input.type ? undefined : existing?.scalerType) ?? (type === "LB" ? "REQUEST_COUNT" : "QUEUE_DELAY"),
    scalerValue: input.scalerValue ?? existing?.scalerValue ?? 4,
    executionTimeoutMs: input.executionTimeoutMs ?? existing?.executionTimeoutMs ?? 600_000,
    templateId: input.template ? null : (input.templateId ?? existing?.templateId ?? null),
    imageName: input.template?.imageName ?? (input.templateId ? null : (existing?.imageName ?? null)),
    env: mergedEnv,
    environmentId: input.environmentId ?? existing?.environmentId ?? null,
    buildId: null, // set by saveEndpoint for an endpoint of no environment
    locations: input.locations ?? existing?.locations ?? null,
    networkVolumeId: input.networkVolumeId ?? existing?.networkVolumeId ?? null, // "" (as the hosted SDK sends) is no volume
    flashBootType: input.flashBootType ?? existing?.flashBootType ?? null,
    minCudaVersion: input.minCudaVersion ?? existing?.minCudaVersion ?? null,
    schedule: input.schedule === undefined ? (existing?.schedule ?? null) : input.schedule,
    createdAt: existing?.createdAt ?? Date.now(),
  };
}
