/** zod schemas of the GraphQL inputs: ranges and references the GraphQL types cannot say. */
import { z } from "zod";
import { errors } from "../../core/errors.ts";
import { formatZodIssues } from "../../core/manifest.ts";

export const GPU_TIERS = ["AMPERE_16", "AMPERE_24", "ADA_24", "AMPERE_48", "ADA_48_PRO", "AMPERE_80", "ADA_80_PRO"] as const;
const DAY_MS = 24 * 3600_000;

const envVars = z.array(z.object({ key: z.string().min(1).max(256), value: z.string().max(65_536) })).max(500);
const opt = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);

const gpuIds = z
  .string()
  .transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean))
  .pipe(z.array(z.enum(GPU_TIERS, { message: `each GPU id must be one of ${GPU_TIERS.join(", ")}` })).min(1).max(3))
  .transform((ids) => ids.join(","));

export const endpointInputSchema = z
  .object({
    id: opt(z.string().min(1)),
    name: z.string().trim().min(1, "name is required").max(191),
    type: opt(z.enum(["QB", "LB"])),
    templateId: opt(z.string().min(1)),
    template: opt(z.object({ imageName: z.string().min(1), env: opt(envVars), containerDiskInGb: opt(z.number().int().min(1).max(2000)) })),
    gpuIds: opt(gpuIds),
    gpuCount: opt(z.number().int().min(1).max(8)),
    instanceIds: opt(z.array(z.string().min(1)).min(1).max(10)),
    workersMin: opt(z.number().int().min(0).max(100)),
    workersMax: opt(z.number().int().min(0).max(100)),
    idleTimeout: opt(z.number().int().min(0).max(86_400)),
    scalerType: opt(z.enum(["QUEUE_DELAY", "REQUEST_COUNT"])),
    scalerValue: opt(z.number().int().min(0).max(10_000)),
    executionTimeoutMs: opt(z.number().int().min(5000).max(7 * DAY_MS)),
    networkVolumeId: opt(z.string()),
    locations: opt(z.string()),
    flashBootType: opt(z.string()),
    minCudaVersion: opt(z.string()),
    environmentId: opt(z.string().min(1)),
    buildId: opt(z.string().min(1)),
    env: opt(envVars),
  });
export type EndpointInput = z.infer<typeof endpointInputSchema>;

export const templateInputSchema = z.object({
  name: z.string().trim().min(1).max(191),
  imageName: z.string().min(1),
  dockerArgs: opt(z.string()),
  containerDiskInGb: opt(z.number().int().min(1).max(2000)),
  env: opt(envVars),
  isServerless: opt(z.boolean()),
});

export const nameSchema = z.string().trim().min(1, "name is required").max(191).regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits, '.', '-' and '_'");
export const sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, "a lowercase hex sha256");
export const uploadSizeSchema = z.number().int().min(1).max(2_000_000_000);
export const urlsSchema = z.record(z.string().min(1), z.url());

export function parseInput<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw errors.BAD_REQUEST(`Invalid ${what}: ${formatZodIssues(result.error)}`);
  return result.data;
}
