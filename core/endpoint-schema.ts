/**
 * The one source of the `@Endpoint(...)` argument rules: names, types, bounds, defaults, the GPU
 * list and the messages. The build checks decorator arguments with it (svc:group-endpoints, error at
 * file:line), the manifest's check takes its bounds (core/manifest.ts), the platform checks its
 * endpoint input with them (platform/graphql/inputs.ts), and the Python SDK's runtime check and
 * discovery's positional argument names (plugins/_python/helper/schema.py) read
 * runtime/python/svc/_schema.py, generated from it by scripts/generate-endpoint-schema.ts (a test
 * keeps it up to date). docs/contracts.md section 3.
 */
import { CronError, isTimeZone, parseCron } from "./cron.ts";
import type { EndpointType, StaticValue } from "./endpoint-types.ts";

/** GPU tiers (platform `gpuIds`, SDK `GpuGroup` members), in the documented order. */
export const GPU_GROUPS = ["AMPERE_16", "AMPERE_24", "ADA_24", "AMPERE_48", "ADA_48_PRO", "AMPERE_80", "ADA_80_PRO"] as const;
export const SCALER_TYPES = ["QUEUE_DELAY", "REQUEST_COUNT"] as const;
export type ScalerType = (typeof SCALER_TYPES)[number];
/** An endpoint's hardware as the platform takes it (gpuIds: GPU_GROUPS members; instanceIds: CPU flavours). */
export interface Hardware {
  gpuIds?: string[];
  gpuCount?: number;
  instanceIds?: string[];
}

/** An endpoint's scaling as the platform takes it. */
export interface Scaling {
  workersMin: number;
  workersMax: number;
  idleTimeout: number;
  scalerType: ScalerType;
  scalerValue: number;
}

/** Methods of load-balanced routes (`@api.get`, `.post`, ...). */
export const HTTP_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];
/** Served by the worker runtime on every load-balanced worker (docs/contracts.md §4): no route may take them. */
export const RESERVED_PATHS = ["/ping", "/execute"] as const;

/** The parameters of `Endpoint(...)`, in positional order. */
export const ENDPOINT_ARGUMENTS = [
  "name",
  "gpu",
  "cpu",
  "gpu_count",
  "workers",
  "idle_timeout",
  "scaler_type",
  "scaler_value",
  "execution_timeout",
  "env",
  "dependencies",
  "flashboot",
  "volume",
  "schedule",
  "batch",
  "retries",
  "network",
  "concurrency",
] as const;
export type EndpointArgument = (typeof ENDPOINT_ARGUMENTS)[number];

const DAY_S = 24 * 3600;

/** Inclusive bounds. Seconds for the timeouts; the platform takes executionTimeoutMs (× 1000). */
export const ENDPOINT_LIMITS = {
  namePattern: "^[A-Za-z0-9][A-Za-z0-9_-]*$",
  gpuTypes: { min: 1, max: 3 },
  gpuCount: { min: 1, max: 8 },
  cpuFlavourPattern: "^[A-Za-z0-9][A-Za-z0-9._-]*$",
  cpuFlavours: { min: 1, max: 10 },
  workers: { min: 0, max: 100 },
  idleTimeoutS: { min: 0, max: DAY_S },
  scalerValue: { min: 0, max: 10_000 },
  executionTimeoutS: { min: 5, max: 7 * DAY_S },
  envNamePattern: "^[A-Za-z_][A-Za-z0-9_]*$",
  envVars: { max: 500, nameLength: 256, valueLength: 65_536 },
  /** A network volume's name (docs/volumes.md); the platform's createNetworkVolume checks the same. */
  volumeNamePattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
  /** `batch=Batch(max_size, max_wait_ms)`: jobs one call takes (the worker protocol's batch take hands at most 64). */
  batchSize: { min: 1, max: 64 },
  batchWaitMs: { min: 0, max: 10_000 },
  /** retries= (docs/platform.md, "Retries"): a job's runs after its first, and the waits between them. */
  maxRetries: { min: 0, max: 10 },
  retryBackoff: { min: 1, max: 10 },
  retryInitialDelayS: { min: 0, max: 3600 },
  /** concurrency=: jobs one worker of a queue-based endpoint runs at once. */
  concurrency: { min: 1, max: 256 },
} as const;

/** What an argument left out (or given as None) means. */
export const ENDPOINT_DEFAULTS = {
  cpu: "cpu3c-2-4",
  gpuCount: 1,
  workers: [0, 3] as const,
  idleTimeoutS: 5,
  scalerType: { QB: "QUEUE_DELAY", LB: "REQUEST_COUNT" } as const,
  scalerValue: 4,
  executionTimeoutS: 600,
  flashboot: true,
  scheduleTimeZone: "UTC",
  batchMaxWaitMs: 10,
  retryBackoff: 2,
  retryInitialDelayS: 1,
  network: true,
} as const;

const L = ENDPOINT_LIMITS;
/** One message per rule; `{got}` is the value given. The SDK raises the same texts. */
export const ENDPOINT_MESSAGES = {
  unknown: `unknown argument {got}; Endpoint(...) takes ${ENDPOINT_ARGUMENTS.join(", ")}`,
  nameMissing: `name is required (Endpoint(name="my-endpoint", ...))`,
  name: "name must be a string of letters, digits, '-' and '_' starting with a letter or digit, got {got}",
  gpuAndCpu: "give either gpu= or cpu=, not both",
  gpuTypes: `gpu takes one GpuGroup or a list of ${L.gpuTypes.min} to ${L.gpuTypes.max}, got {got}`,
  gpu: `invalid GPU id {got}; valid GpuGroup members: ${GPU_GROUPS.join(", ")}`,
  gpuTwice: "gpu lists the same GpuGroup twice",
  gpuCount: `gpu_count must be an integer from ${L.gpuCount.min} to ${L.gpuCount.max}, got {got}`,
  gpuCountWithoutGpu: "gpu_count needs gpu=",
  cpuFlavours: `cpu takes a CPU flavour ("${ENDPOINT_DEFAULTS.cpu}") or a list of ${L.cpuFlavours.min} to ${L.cpuFlavours.max} of them, got {got}`,
  cpu: `invalid CPU flavour {got}; use a name like "${ENDPOINT_DEFAULTS.cpu}"`,
  workers: "workers must be an integer max or a (min, max) pair of integers, got {got}",
  workersRange: `workers (min, max) needs ${L.workers.min} <= min <= max <= ${L.workers.max}, got {got}`,
  idleTimeout: `idle_timeout must be a whole number of seconds from ${L.idleTimeoutS.min} to ${L.idleTimeoutS.max}, got {got}`,
  scalerType: `scaler_type must be one of ${SCALER_TYPES.join(", ")}, got {got}`,
  scalerValue: `scaler_value must be an integer from ${L.scalerValue.min} to ${L.scalerValue.max}, got {got}`,
  executionTimeout: `execution_timeout must be a number of seconds from ${L.executionTimeoutS.min} to ${L.executionTimeoutS.max} (7 days), got {got}`,
  env: `env must be a dict of at most ${L.envVars.max} str names to str values, got {got}`,
  envName: `env name {got} is not a valid environment variable name (letters, digits, '_', at most ${L.envVars.nameLength} characters)`,
  envValue: `env value of {got} must be a string of at most ${L.envVars.valueLength} characters`,
  dependencies: `dependencies must be a list of requirement strings ("pillow>=10"), got {got}`,
  flashboot: "flashboot must be True or False, got {got}",
  volume: "volume must be the name of a network volume (1-64 letters, digits, '.', '_' or '-'; svc volume list), got {got}",
  schedule: `schedule must be a cron string ("0 3 * * *") or Cron("0 3 * * *", timezone="Europe/Paris", input={...}), got {got}`,
  scheduleCron: "the cron expression {got} of schedule is invalid: {why}",
  scheduleTimeZone: `schedule timezone {got} is not an IANA time zone name ("${ENDPOINT_DEFAULTS.scheduleTimeZone}", "Europe/Paris")`,
  scheduleInput: "schedule input must be a dict of the function's keyword arguments, got {got}",
  batch: "batch must be Batch(max_size=16, max_wait_ms=50), got {got}",
  batchSize: `batch max_size must be an integer from ${L.batchSize.min} to ${L.batchSize.max}, got {got}`,
  batchWait: `batch max_wait_ms must be a number of milliseconds from ${L.batchWaitMs.min} to ${L.batchWaitMs.max}, got {got}`,
  concurrency: `concurrency must be an integer from ${L.concurrency.min} to ${L.concurrency.max} (jobs one worker runs at once), got {got}`,
  concurrencyWithBatch: "concurrency does not apply to a batched endpoint (its worker runs one batch at a time): give batch= or concurrency=",
  queueBasedOnly: "only a queue-based endpoint (one @Endpoint function) takes {got}, not one with load-balanced routes",
  retries: `retries must be an integer from ${L.maxRetries.min} to ${L.maxRetries.max} or Retries(max_retries=${L.maxRetries.min}..${L.maxRetries.max}, backoff=${L.retryBackoff.min}..${L.retryBackoff.max}, initial_delay=${L.retryInitialDelayS.min}..${L.retryInitialDelayS.max} seconds), got {got}`,
  network: "network must be True (egress: the endpoint's workers may open outside connections) or False (none), got {got}",
} as const;
export type EndpointRule = keyof typeof ENDPOINT_MESSAGES;

/** The normalised settings of one endpoint (what the manifest and the platform receive). */
export interface EndpointSettingsFromArguments {
  hardware: Hardware;
  scaling: Scaling;
  executionTimeoutMs: number;
  env: Record<string, string>;
  dependencies: string[];
  /** The network volume's name, mounted at /platform-volume in the endpoint's workers (resolved to its id at deploy). */
  volume?: string;
  /** `schedule=`: the platform enqueues a job with `input` at each time the cron expression names. */
  schedule?: Schedule;
  /** `batch=`: the function takes a list of inputs and returns a list of results. */
  batch?: BatchSettings;
  /** `retries=` with at least one retry. */
  retries?: RetryPolicy;
}

/** A scheduled endpoint's schedule, normalised (docs/platform.md, "Schedules"). */
export interface Schedule {
  cron: string;
  /** An IANA time zone name. */
  timezone: string;
  /** The job input each run gets. */
  input: { [key: string]: StaticValue };
}

/** Request batching (docs/platform.md, "Request batching"). */
export interface BatchSettings {
  maxSize: number;
  maxWaitMs: number;
  /** `network=False`: the endpoint's workers get no egress, only their channel to the platform (docs/platform.md, "Threat model"). */
  network?: false;
}

/**
 * A job whose function raised runs again up to maxRetries times; the k-th retry waits
 * initialDelayMs × backoff^(k-1) first. INPUT_INVALID is never retried (docs/platform.md, "Retries").
 */
export interface RetryPolicy {
  maxRetries: number;
  backoff: number;
  initialDelayMs: number;
}

/** `retries=` as given (an int, or Retries(...) as discovery and the SDK read it: a dict of its fields) → the policy; undefined for none. */
export function retryPolicyOf(value: StaticValue | undefined): RetryPolicy | undefined {
  if (value === undefined) return undefined;
  const given = isInt(value) ? { max_retries: value } : value;
  if (typeof given !== "object" || given === null || Array.isArray(given)) return fail("retries", value);
  for (const key of Object.keys(given)) if (!["max_retries", "backoff", "initial_delay"].includes(key)) fail("retries", value);
  const {
    max_retries: max,
    backoff = ENDPOINT_DEFAULTS.retryBackoff,
    initial_delay: delay = ENDPOINT_DEFAULTS.retryInitialDelayS,
  } = given as Record<string, StaticValue>;
  if (
    !isInt(max) ||
    !within(max, L.maxRetries) ||
    !isNumber(backoff) ||
    !within(backoff, L.retryBackoff) ||
    !isNumber(delay) ||
    !within(delay, L.retryInitialDelayS)
  )
    fail("retries", value);
  return (max as number) === 0 ? undefined : { maxRetries: max as number, backoff: backoff as number, initialDelayMs: Math.round((delay as number) * 1000) };
}

export class EndpointArgumentError extends Error {
  constructor(
    readonly rule: EndpointRule,
    got?: unknown,
    why?: string,
  ) {
    super(ENDPOINT_MESSAGES[rule].replace("{got}", got === undefined ? "" : show(got)).replace("{why}", why ?? ""));
  }
}

const fail = (rule: EndpointRule, got?: unknown, why?: string): never => {
  throw new EndpointArgumentError(rule, got, why);
};
const isNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);
const isInt = (value: unknown): value is number => isNumber(value) && Number.isInteger(value);
const within = (value: number, range: { min: number; max: number }) => value >= range.min && value <= range.max;
const show = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value)));

/** The endpoint's name, checked. Throws EndpointArgumentError. */
export function endpointNameOf(args: Record<string, StaticValue>): string {
  const name = args.name;
  if (name === undefined || name === null) fail("nameMissing");
  if (typeof name !== "string" || !new RegExp(L.namePattern).test(name)) fail("name", name);
  return name as string;
}

/**
 * Decorator arguments (as evaluated statically; None = not given) → the endpoint's settings.
 * Throws EndpointArgumentError naming the first rule broken.
 */
export function normaliseEndpointArguments(args: Record<string, StaticValue>, type: EndpointType): EndpointSettingsFromArguments {
  for (const key of Object.keys(args)) if (!(ENDPOINT_ARGUMENTS as readonly string[]).includes(key)) fail("unknown", key);
  endpointNameOf(args);
  const arg = (key: EndpointArgument): StaticValue | undefined => (args[key] === null ? undefined : args[key]);

  const gpu = arg("gpu");
  const cpu = arg("cpu");
  const gpuCount = arg("gpu_count");
  let hardware: Hardware;
  if (gpu !== undefined && cpu !== undefined) fail("gpuAndCpu");
  if (gpu !== undefined) {
    const ids = Array.isArray(gpu) ? gpu : [gpu];
    if (!within(ids.length, L.gpuTypes)) fail("gpuTypes", ids.length);
    for (const id of ids) if (typeof id !== "string" || !(GPU_GROUPS as readonly string[]).includes(id)) fail("gpu", id);
    if (new Set(ids).size !== ids.length) fail("gpuTwice");
    const count = gpuCount ?? ENDPOINT_DEFAULTS.gpuCount;
    if (!isInt(count) || !within(count, L.gpuCount)) fail("gpuCount", count);
    hardware = { gpuIds: ids as string[], gpuCount: count as number };
  } else {
    if (gpuCount !== undefined) fail("gpuCountWithoutGpu");
    const flavours = cpu === undefined ? [ENDPOINT_DEFAULTS.cpu] : Array.isArray(cpu) ? cpu : [cpu];
    if (!within(flavours.length, L.cpuFlavours)) fail("cpuFlavours", cpu);
    const pattern = new RegExp(L.cpuFlavourPattern);
    for (const flavour of flavours) if (typeof flavour !== "string" || !pattern.test(flavour)) fail("cpu", flavour);
    hardware = { instanceIds: flavours as string[] };
  }

  const workers = arg("workers") ?? [...ENDPOINT_DEFAULTS.workers];
  let range: [number, number];
  if (isInt(workers)) range = [0, workers];
  else if (Array.isArray(workers) && workers.length === 2 && isInt(workers[0]) && isInt(workers[1])) range = [workers[0], workers[1]];
  else return fail("workers", workers);
  const [workersMin, workersMax] = range;
  if (workersMin < L.workers.min || workersMax < workersMin || workersMax > L.workers.max) fail("workersRange", range);

  const idleTimeout = arg("idle_timeout") ?? ENDPOINT_DEFAULTS.idleTimeoutS;
  if (!isInt(idleTimeout) || !within(idleTimeout, L.idleTimeoutS)) fail("idleTimeout", idleTimeout);
  const scalerType = arg("scaler_type") ?? ENDPOINT_DEFAULTS.scalerType[type];
  if (typeof scalerType !== "string" || !(SCALER_TYPES as readonly string[]).includes(scalerType)) fail("scalerType", scalerType);
  const scalerValue = arg("scaler_value") ?? ENDPOINT_DEFAULTS.scalerValue;
  if (!isInt(scalerValue) || !within(scalerValue, L.scalerValue)) fail("scalerValue", scalerValue);

  const timeout = arg("execution_timeout") ?? ENDPOINT_DEFAULTS.executionTimeoutS;
  if (!isNumber(timeout) || !within(timeout, L.executionTimeoutS)) fail("executionTimeout", timeout);

  const env = arg("env") ?? {};
  if (typeof env !== "object" || Array.isArray(env) || Object.keys(env).length > L.envVars.max) fail("env", env);
  const envName = new RegExp(L.envNamePattern);
  for (const [key, value] of Object.entries(env as Record<string, StaticValue>)) {
    if (!envName.test(key) || key.length > L.envVars.nameLength) fail("envName", key);
    if (typeof value !== "string" || value.length > L.envVars.valueLength) fail("envValue", key);
  }

  const dependencies = arg("dependencies") ?? [];
  if (!Array.isArray(dependencies) || dependencies.some((dep) => typeof dep !== "string" || dep.trim() === "")) fail("dependencies", dependencies);

  const flashboot = arg("flashboot");
  if (flashboot !== undefined && typeof flashboot !== "boolean") fail("flashboot", flashboot);

  const network = arg("network");
  if (network !== undefined && typeof network !== "boolean") fail("network", network);

  const volume = arg("volume");
  if (volume !== undefined && (typeof volume !== "string" || !new RegExp(L.volumeNamePattern).test(volume))) fail("volume", volume);

  const schedule = arg("schedule");
  const batch = arg("batch");
  if (type === "LB" && schedule !== undefined) fail("queueBasedOnly", "schedule");
  if (type === "LB" && batch !== undefined) fail("queueBasedOnly", "batch");
  checkConcurrency(arg("concurrency"), type, batch);
  const retries = retryPolicyOf(arg("retries"));

  return {
    hardware,
    ...(volume === undefined ? {} : { volume: volume as string }),
    ...(schedule === undefined ? {} : { schedule: scheduleOf(schedule) }),
    ...(batch === undefined ? {} : { batch: batchOf(batch) }),
    ...(retries && { retries }),
    ...(network === false ? { network: false as const } : {}),
    scaling: {
      workersMin,
      workersMax,
      idleTimeout: idleTimeout as number,
      scalerType: scalerType as Scaling["scalerType"],
      scalerValue: scalerValue as number,
    },
    executionTimeoutMs: Math.round((timeout as number) * 1000),
    env: env as Record<string, string>,
    dependencies: (dependencies as string[]).map((dep) => dep.trim()),
  };
}

/** `concurrency=N`: queue-based, not batched, 1-256. The worker reads it from its Endpoint (docs/contracts.md). */
function checkConcurrency(concurrency: StaticValue | undefined, type: EndpointType, batch: StaticValue | undefined): void {
  if (concurrency === undefined) return;
  if (type === "LB") fail("queueBasedOnly", "concurrency");
  if (batch !== undefined) fail("concurrencyWithBatch");
  if (!isInt(concurrency) || !within(concurrency, L.concurrency)) fail("concurrency", concurrency);
}

const isDict = (value: unknown): value is { [key: string]: StaticValue } => typeof value === "object" && value !== null && !Array.isArray(value);
const CRON_KEYS = ["cron", "timezone", "input"];
const BATCH_KEYS = ["max_size", "max_wait_ms"];

/** `schedule="0 3 * * *"` or `Cron(...)` (discovery reads it as {cron, timezone, input}) → the schedule. */
export function scheduleOf(value: StaticValue): Schedule {
  const given = typeof value === "string" ? { cron: value } : value;
  if (!isDict(given) || typeof given.cron !== "string" || Object.keys(given).some((key) => !CRON_KEYS.includes(key))) return fail("schedule", value);
  const cron = given.cron as string;
  try {
    parseCron(cron);
  } catch (error) {
    if (error instanceof CronError) fail("scheduleCron", cron, error.message);
    throw error;
  }
  const timezone = given.timezone ?? ENDPOINT_DEFAULTS.scheduleTimeZone;
  if (typeof timezone !== "string" || !isTimeZone(timezone)) fail("scheduleTimeZone", timezone);
  const input = given.input ?? {};
  if (!isDict(input)) fail("scheduleInput", input);
  return { cron: cron.trim(), timezone: timezone as string, input: input as Schedule["input"] };
}

/** `Batch(max_size=16, max_wait_ms=50)` (discovery reads it as {max_size, max_wait_ms}) → the batch settings. */
export function batchOf(value: StaticValue): BatchSettings {
  if (!isDict(value) || value.max_size === undefined || Object.keys(value).some((key) => !BATCH_KEYS.includes(key))) return fail("batch", value);
  const maxSize = value.max_size;
  if (!isInt(maxSize) || !within(maxSize, L.batchSize)) fail("batchSize", maxSize);
  const maxWaitMs = value.max_wait_ms ?? ENDPOINT_DEFAULTS.batchMaxWaitMs;
  if (!isNumber(maxWaitMs) || !within(maxWaitMs, L.batchWaitMs)) fail("batchWait", maxWaitMs);
  return { maxSize: maxSize as number, maxWaitMs: maxWaitMs as number };
}
