/**
 * The manifest schema (`.svc/svc_manifest.json`): validated when written and when read.
 * Documented field by field in docs/manifest.md; docs/contracts.md shows an example.
 */
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { ENDPOINT_LIMITS, HTTP_METHODS, SCALER_TYPES } from "./endpoint-schema.ts";
import { errors } from "./errors.ts";
import type { StaticValue } from "./endpoint-types.ts";

export const MANIFEST_VERSION = 1;
export const MANIFEST_FILE = "svc_manifest.json";

const httpMethod = z.enum(HTTP_METHODS);

const staticValue: z.ZodType<StaticValue> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(staticValue), z.record(z.string(), staticValue)]),
);

/** A function parameter as discovery read it from the AST (core/types.ts FunctionParam). */
const functionParam = z.strictObject({
  name: z.string().min(1),
  kind: z.enum(["positional_only", "positional_or_keyword", "var_positional", "keyword_only", "var_keyword"]),
  annotation: z.string().optional(),
  required: z.boolean(),
  default: staticValue.optional(),
  defaultSource: z.string().optional(),
});

const manifestFunction = z.strictObject({
  name: z.string().min(1),
  module: z.string().min(1),
  line: z.number().int().positive(),
  isAsync: z.boolean(),
  isGenerator: z.boolean(),
  httpMethod: httpMethod.optional(),
  httpPath: z.string().startsWith("/").optional(),
  params: z.array(functionParam).optional(),
  types: z
    .record(
      z.string(),
      z.union([
        z.strictObject({
          kind: z.enum(["TypedDict", "dataclass"]),
          fields: z.array(z.strictObject({ name: z.string(), annotation: z.string(), required: z.boolean() })),
        }),
        z.strictObject({ kind: z.literal("Enum"), values: z.array(z.union([z.string(), z.number()])) }),
      ]),
    )
    .optional(),
  returns: z.string().optional(),
});

const hardware = z
  .strictObject({
    gpuIds: z.array(z.string()).min(ENDPOINT_LIMITS.gpuTypes.min).max(ENDPOINT_LIMITS.gpuTypes.max).optional(),
    gpuCount: z.number().int().positive().optional(),
    instanceIds: z.array(z.string()).min(1).optional(),
  })
  .refine((h) => Boolean(h.gpuIds) !== Boolean(h.instanceIds), { message: "exactly one of gpuIds or instanceIds" });

const scaling = z
  .strictObject({
    workersMin: z.number().int().min(0),
    workersMax: z.number().int().min(0),
    idleTimeout: z.number().min(0),
    scalerType: z.enum(SCALER_TYPES),
    scalerValue: z.number().min(0),
  })
  .refine((s) => s.workersMin <= s.workersMax, { message: "workersMin must not exceed workersMax" });

export const manifestEndpointSchema = z.strictObject({
  name: z.string().regex(new RegExp(ENDPOINT_LIMITS.namePattern), "letters, digits, '-' and '_'"),
  type: z.enum(["QB", "LB"]),
  file: z.string().min(1),
  module: z.string().min(1),
  handler: z.string().min(1),
  functions: z.array(manifestFunction).min(1),
  hardware,
  image: z.string().min(1),
  scaling,
  executionTimeoutMs: z.number().int().positive(),
  env: z.record(z.string(), z.string()),
  dependencies: z.array(z.string()),
  /** The network volume's name (`volume=`); the deploy resolves it to the volume's id (docs/volumes.md). */
  volume: z.string().optional(),
  /** `schedule=`: the platform runs the function at these times (docs/platform.md, "Schedules"). */
  schedule: z.strictObject({ cron: z.string().min(1), timezone: z.string().min(1), input: z.record(z.string(), staticValue) }).optional(),
  /** `batch=`: the worker hands the function a list of up to maxSize inputs (docs/platform.md, "Request batching"). */
  batch: z
    .strictObject({
      maxSize: z.number().int().min(ENDPOINT_LIMITS.batchSize.min).max(ENDPOINT_LIMITS.batchSize.max),
      maxWaitMs: z.number().min(ENDPOINT_LIMITS.batchWaitMs.min).max(ENDPOINT_LIMITS.batchWaitMs.max),
    })
    .optional(),
  /** `retries=` (core/endpoint-schema.ts RetryPolicy); the platform reads it from the build's manifest when a job fails. */
  /** Bounded here too, not only by the SDK and the build: the platform parses every manifest it is given with this schema. */
  retries: z
    .strictObject({
      maxRetries: z.number().int().min(1).max(ENDPOINT_LIMITS.maxRetries.max),
      backoff: z.number().min(ENDPOINT_LIMITS.retryBackoff.min).max(ENDPOINT_LIMITS.retryBackoff.max),
      initialDelayMs: z
        .number()
        .int()
        .min(ENDPOINT_LIMITS.retryInitialDelayS.min * 1000)
        .max(ENDPOINT_LIMITS.retryInitialDelayS.max * 1000),
    })
    .optional(),
  /** `network=False`: the workers get no egress (docs/platform.md, "Threat model"); absent: they do. */
  network: z.literal(false).optional(),
  /** `runpod`: a stock hosted-SDK worker, run by that SDK (docs/deploy.md, "Stock workers"); absent: svc's runtime. */
  runtime: z.literal("runpod").optional(),
});

export const manifestSchema = z.looseObject({
  version: z.literal(MANIFEST_VERSION),
  app: z.string().min(1),
  pythonVersion: z.string().regex(/^3\.\d+$/),
  fingerprint: z.string().startsWith("sha256:"),
  endpoints: z.record(z.string(), manifestEndpointSchema),
  functions: z.record(z.string(), z.string()),
  routes: z.record(z.string(), z.array(z.strictObject({ method: httpMethod, path: z.string(), function: z.string() }))),
  urls: z.record(z.string(), z.string()).optional(),
});

export type Manifest = z.infer<typeof manifestSchema>;
export type ManifestEndpoint = z.infer<typeof manifestEndpointSchema>;

export function formatZodIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`).join("; ");
}

export function parseManifest(value: unknown, file?: string): Manifest {
  const result = manifestSchema.safeParse(value);
  if (!result.success) throw errors.MANIFEST_INVALID(formatZodIssues(result.error), file);
  return result.data;
}

export async function readManifest(file: string): Promise<Manifest> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    throw errors.BUILD_MISSING(dirname(dirname(file)));
  }
  try {
    return parseManifest(JSON.parse(text), file);
  } catch (error) {
    if (error instanceof SyntaxError) throw errors.MANIFEST_INVALID(error.message, file);
    throw error;
  }
}

/** The bytes of a manifest file (validate it first: parseManifest). */
export const manifestText = (manifest: Manifest): string => `${JSON.stringify(manifest, null, 2)}\n`;

export async function writeManifest(file: string, manifest: Manifest): Promise<void> {
  const valid = parseManifest(manifest, file);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, manifestText(valid));
}
