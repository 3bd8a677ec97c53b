/**
 * svc:group-endpoints — turns discovered functions into endpoint specs, one per endpoint name:
 * queue-based (one `@Endpoint` function each) or load-balanced (one `Endpoint` object with routes).
 * Validates the uniqueness rules and normalises the decorator arguments (docs/contracts.md §3).
 */
import { errors } from "../core/errors.ts";
import type { DiscoveredFunction, EndpointDeclaration, EndpointSpec, EndpointType, Hardware, Scaling, SourceLocation, StaticValue, SvcPlugin } from "../core/types.ts";

export const PLUGIN_NAME = "svc:group-endpoints";

export const GPU_GROUPS = ["AMPERE_16", "AMPERE_24", "ADA_24", "AMPERE_48", "ADA_48_PRO", "AMPERE_80", "ADA_80_PRO"] as const;
export const DEFAULT_CPU = "cpu3c-2-4";
export const MAX_GPU_IDS = 3;
export const ENDPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

const ARGUMENTS = [
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
] as const;
const SCALER_TYPES = ["QUEUE_DELAY", "REQUEST_COUNT"] as const;
const DEFAULTS = { workers: [0, 3] as const, idleTimeout: 5, scalerValue: 4, executionTimeoutS: 600 };

export function groupEndpoints(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.group.tapPromise(PLUGIN_NAME, async (endpoints, ctx) => [...endpoints, ...groupFunctions(ctx.functions)]);
    },
  };
}

const locOf = (d: SourceLocation): SourceLocation => ({ file: d.file, line: d.line });
const sameDeclaration = (a: EndpointDeclaration, b: EndpointDeclaration) => a.file === b.file && a.line === b.line;

/** Groups functions by endpoint name, in order of first appearance. */
export function groupFunctions(functions: readonly DiscoveredFunction[]): EndpointSpec[] {
  const groups = new Map<string, { type: EndpointType; declaration: EndpointDeclaration; functions: DiscoveredFunction[] }>();
  for (const fn of functions) {
    const declaration = fn.declaration;
    const name = endpointName(declaration);
    const type: EndpointType = fn.route ? "LB" : "QB";
    const group = groups.get(name);
    if (!group) {
      groups.set(name, { type, declaration, functions: [fn] });
      continue;
    }
    if (group.type !== type) throw errors.MIXED_ENDPOINT_KINDS(name, locOf(declaration));
    if (!sameDeclaration(group.declaration, declaration)) throw errors.DUPLICATE_ENDPOINT(name, locOf(group.declaration), locOf(declaration));
    // One `worker = Endpoint(...)` object decorating two functions (`@worker`): a QB endpoint has one.
    if (type === "QB") throw errors.DUPLICATE_ENDPOINT(name, locOf(group.functions[0]!), locOf(fn));
    group.functions.push(fn);
  }

  // Function names are global: cross-endpoint calls and LB /execute find functions by name.
  const owners = new Map<string, { endpoint: string; fn: DiscoveredFunction }>();
  for (const [endpoint, group] of groups) {
    for (const fn of group.functions) {
      const owner = owners.get(fn.name);
      if (!owner) owners.set(fn.name, { endpoint, fn });
      else if (owner.endpoint !== endpoint || owner.fn.file !== fn.file || owner.fn.line !== fn.line) {
        throw errors.DUPLICATE_FUNCTION(fn.name, owner.endpoint, endpoint, locOf(fn));
      }
    }
  }

  return [...groups].map(([name, group]) => {
    const d = group.declaration;
    const first = group.functions[0]!;
    return {
      name,
      type: group.type,
      file: d.file,
      module: first.module,
      line: d.line,
      functions: group.functions,
      ...normaliseArguments(d, group.type),
    };
  });
}

function endpointName(d: EndpointDeclaration): string {
  const name = d.args.name;
  if (name === undefined || name === null) throw errors.ENDPOINT_ARGUMENT_INVALID(locOf(d), `name is required (Endpoint(name="my-endpoint", ...)).`);
  if (typeof name !== "string" || !ENDPOINT_NAME.test(name)) {
    throw errors.ENDPOINT_ARGUMENT_INVALID(locOf(d), `name must be a string of letters, digits, '-' and '_' starting with a letter or digit, got ${show(name)}.`);
  }
  return name;
}

type Normalised = Pick<EndpointSpec, "hardware" | "scaling" | "executionTimeoutMs" | "env" | "dependencies">;

/** Decorator arguments → the endpoint's hardware, scaling, timeout, env and dependencies. */
export function normaliseArguments(d: EndpointDeclaration, type: EndpointType): Normalised {
  const fail = (message: string) => errors.ENDPOINT_ARGUMENT_INVALID(locOf(d), message);
  const args = d.args;
  for (const key of Object.keys(args)) {
    if (!(ARGUMENTS as readonly string[]).includes(key)) throw fail(`unknown argument "${key}"; Endpoint(...) takes ${ARGUMENTS.join(", ")}.`);
  }
  // None means "not given" for every optional argument.
  const arg = (key: (typeof ARGUMENTS)[number]): StaticValue | undefined => (args[key] === null ? undefined : args[key]);

  // hardware
  const gpu = arg("gpu");
  const cpu = arg("cpu");
  const gpuCount = arg("gpu_count");
  let hardware: Hardware;
  if (gpu !== undefined && cpu !== undefined) throw fail("give either gpu= or cpu=, not both.");
  if (gpu !== undefined) {
    const ids = Array.isArray(gpu) ? gpu : [gpu];
    if (ids.length === 0 || ids.length > MAX_GPU_IDS) throw fail(`gpu takes one GpuGroup or a list of 1 to ${MAX_GPU_IDS}, got ${ids.length}.`);
    for (const id of ids) {
      if (typeof id !== "string" || !(GPU_GROUPS as readonly string[]).includes(id)) {
        throw fail(`invalid GPU id ${show(id)}; valid GpuGroup members: ${GPU_GROUPS.join(", ")}.`);
      }
    }
    if (new Set(ids).size !== ids.length) throw fail("gpu lists the same GpuGroup twice.");
    const count = gpuCount ?? 1;
    if (!isInt(count) || count < 1) throw fail(`gpu_count must be a positive integer, got ${show(count)}.`);
    hardware = { gpuIds: ids as string[], gpuCount: count };
  } else {
    if (gpuCount !== undefined) throw fail("gpu_count needs gpu=.");
    const flavours = cpu === undefined ? [DEFAULT_CPU] : Array.isArray(cpu) ? cpu : [cpu];
    if (flavours.length === 0) throw fail("cpu takes a CPU flavour (\"cpu3c-2-4\") or a non-empty list of them.");
    for (const flavour of flavours) {
      if (typeof flavour !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(flavour)) throw fail(`invalid CPU flavour ${show(flavour)}; use a name like "${DEFAULT_CPU}".`);
    }
    hardware = { instanceIds: flavours as string[] };
  }

  // scaling
  const workers = arg("workers") ?? [...DEFAULTS.workers];
  let workersMin: number;
  let workersMax: number;
  if (isInt(workers)) [workersMin, workersMax] = [0, workers];
  else if (Array.isArray(workers) && workers.length === 2 && isInt(workers[0]) && isInt(workers[1])) [workersMin, workersMax] = [workers[0], workers[1]];
  else throw fail(`workers must be an integer or a (min, max) pair of integers, got ${show(workers)}.`);
  if (workersMin < 0 || workersMax < workersMin) throw fail(`workers (min, max) needs 0 <= min <= max, got (${workersMin}, ${workersMax}).`);

  const idleTimeout = arg("idle_timeout") ?? DEFAULTS.idleTimeout;
  if (!isNumber(idleTimeout) || idleTimeout < 0) throw fail(`idle_timeout must be a number of seconds >= 0, got ${show(idleTimeout)}.`);

  const scalerType = arg("scaler_type") ?? (type === "LB" ? "REQUEST_COUNT" : "QUEUE_DELAY");
  if (typeof scalerType !== "string" || !(SCALER_TYPES as readonly string[]).includes(scalerType)) {
    throw fail(`scaler_type must be one of ${SCALER_TYPES.join(", ")}, got ${show(scalerType)}.`);
  }
  const scalerValue = arg("scaler_value") ?? DEFAULTS.scalerValue;
  if (!isNumber(scalerValue) || scalerValue <= 0) throw fail(`scaler_value must be a positive number, got ${show(scalerValue)}.`);
  const scaling: Scaling = { workersMin, workersMax, idleTimeout, scalerType: scalerType as Scaling["scalerType"], scalerValue };

  // execution
  const timeout = arg("execution_timeout") ?? DEFAULTS.executionTimeoutS;
  if (!isNumber(timeout) || timeout <= 0) throw fail(`execution_timeout must be a positive number of seconds, got ${show(timeout)}.`);
  const executionTimeoutMs = Math.round(timeout * 1000);

  const env = arg("env") ?? {};
  if (typeof env !== "object" || Array.isArray(env)) throw fail(`env must be a dict of str to str, got ${show(env)}.`);
  for (const [key, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw fail(`env name ${show(key)} is not a valid environment variable name.`);
    if (typeof value !== "string") throw fail(`env ${key} must be a string, got ${show(value)}.`);
  }

  const dependencies = arg("dependencies") ?? [];
  if (!Array.isArray(dependencies) || dependencies.some((dep) => typeof dep !== "string" || dep.trim() === "")) {
    throw fail(`dependencies must be a list of requirement strings ("pillow>=10"), got ${show(dependencies)}.`);
  }

  const flashboot = arg("flashboot");
  if (flashboot !== undefined && typeof flashboot !== "boolean") throw fail(`flashboot must be True or False, got ${show(flashboot)}.`);

  return {
    hardware,
    scaling,
    executionTimeoutMs,
    env: env as Record<string, string>,
    dependencies: (dependencies as string[]).map((dep) => dep.trim()),
  };
}

const isNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);
const isInt = (value: unknown): value is number => isNumber(value) && Number.isInteger(value);
const show = (value: unknown): string => JSON.stringify(value) ?? String(value);
