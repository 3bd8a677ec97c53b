/** zod schemas of the GraphQL inputs: ranges and references the GraphQL types cannot say. */
import { z } from "zod";
import { errors } from "../../core/errors.ts";
import { ENDPOINT_LIMITS as LIMITS, EndpointArgumentError, GPU_GROUPS, SCALER_TYPES, scheduleOf, type Schedule } from "../../core/endpoint-schema.ts";
import { formatZodIssues } from "../../core/manifest.ts";
import { PLATFORM_NAME } from "../../core/client/environments.ts";

/** Endpoint bounds come from the one Endpoint schema (core/endpoint-schema.ts), as in the build and the SDK. */
const range = (bounds: { min: number; max: number }, scale = 1) =>
  z
    .number()
    .int()
    .min(bounds.min * scale)
    .max(bounds.max * scale);
const envVars = z
  .array(z.object({ key: z.string().min(1).max(LIMITS.envVars.nameLength), value: z.string().max(LIMITS.envVars.valueLength) }))
  .max(LIMITS.envVars.max);
const opt = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);
/** A template's container disk, inline in saveEndpoint or in saveTemplate. */
const containerDiskInGb = z.number().int().min(1).max(2000);

const gpuIds = z
  .string()
  .transform((s) =>
    s
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(
    z
      .array(z.enum(GPU_GROUPS, { message: `each GPU id must be one of ${GPU_GROUPS.join(", ")}` }))
      .min(LIMITS.gpuTypes.min)
      .max(LIMITS.gpuTypes.max),
  )
  .transform((ids) => ids.join(","));

/** A schedule, checked by the one Endpoint schema's rules (cron grammar, time zone, input). */
const scheduleInput = z.object({ cron: z.string(), timezone: opt(z.string()), input: z.unknown().optional() }).transform((value, check): Schedule => {
  try {
    return scheduleOf({
      cron: value.cron,
      ...(value.timezone ? { timezone: value.timezone } : {}),
      ...(value.input == null ? {} : { input: value.input as Schedule["input"] }),
    });
  } catch (error) {
    if (!(error instanceof EndpointArgumentError)) throw error;
    check.addIssue({ code: "custom", message: error.message });
    return z.NEVER;
  }
});

export const endpointInputSchema = z.object({
  id: opt(z.string().min(1)),
  name: z.string().trim().min(1, "name is required").max(191),
  type: opt(z.enum(["QB", "LB"])),
  templateId: opt(z.string().min(1)),
  template: opt(z.object({ imageName: z.string().min(1), env: opt(envVars), containerDiskInGb: opt(containerDiskInGb) })),
  gpuIds: opt(gpuIds),
  gpuCount: opt(range(LIMITS.gpuCount)),
  instanceIds: opt(z.array(z.string().min(1)).min(LIMITS.cpuFlavours.min).max(LIMITS.cpuFlavours.max)),
  workersMin: opt(range(LIMITS.workers)),
  workersMax: opt(range(LIMITS.workers)),
  idleTimeout: opt(range(LIMITS.idleTimeoutS)),
  scalerType: opt(z.enum(SCALER_TYPES)),
  scalerValue: opt(range(LIMITS.scalerValue)),
  executionTimeoutMs: opt(range(LIMITS.executionTimeoutS, 1000)),
  networkVolumeId: opt(z.string()),
  locations: opt(z.string()),
  flashBootType: opt(z.string()),
  minCudaVersion: opt(z.string()),
  allowedCudaVersions: opt(z.string().max(200)),
  environmentId: opt(z.string().min(1)),
  buildId: opt(z.string().min(1)),
  env: opt(envVars),
  /** null removes the endpoint's schedule; left out keeps it. */
  schedule: scheduleInput.nullish(),
});
export type EndpointInput = z.infer<typeof endpointInputSchema>;

export const templateInputSchema = z.object({
  name: z.string().trim().min(1).max(191),
  imageName: z.string().min(1),
  dockerArgs: opt(z.string()),
  containerDiskInGb: opt(containerDiskInGb),
  env: opt(envVars),
  isServerless: opt(z.boolean()),
  // hosted fields accepted and not kept (docs/contracts.md, "Hosted GraphQL compatibility")
  volumeInGb: opt(z.number().int().min(0).max(10_000)),
  volumeMountPath: opt(z.string().max(1000)),
  ports: opt(z.string().max(1000)),
  containerRegistryAuthId: opt(z.string().max(200)),
  startSsh: opt(z.boolean()),
  startJupyter: opt(z.boolean()),
  isPublic: opt(z.boolean()),
  readme: opt(z.string().max(100_000)),
});

export const updateEndpointTemplateSchema = z.object({ endpointId: z.string().min(1), templateId: z.string().min(1) });

export const nameSchema = z.string().trim().min(1, "name is required").max(PLATFORM_NAME.max).regex(PLATFORM_NAME.pattern, "letters, digits, '.', '-' and '_'");
export const sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, "a lowercase hex sha256");
export const uploadSizeSchema = z.number().int().min(1).max(2_000_000_000);
export const urlsSchema = z.record(z.string().min(1), z.url());

export function parseInput<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw errors.BAD_REQUEST(`Invalid ${what}: ${formatZodIssues(result.error)}`);
  return result.data;
}

/** createNetworkVolume / updateNetworkVolume / deleteNetworkVolume (docs/volumes.md). */
const volumeName = z
  .string()
  .regex(new RegExp(LIMITS.volumeNamePattern), "a volume name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");
const volumeSizeGb = z.number().int().min(1).max(4000);
export const createVolumeSchema = z.object({
  name: volumeName,
  size: volumeSizeGb,
  dataCenterId: opt(z.string().regex(/^[A-Za-z0-9-]{1,32}$/, "a data centre id is letters, digits and '-'")),
});
export const updateVolumeSchema = z.object({
  id: z.string().min(1),
  name: opt(volumeName),
  size: opt(volumeSizeGb),
});
export const deleteVolumeSchema = z.object({ id: z.string().min(1), force: opt(z.boolean()) });
