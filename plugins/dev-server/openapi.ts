/**
 * The OpenAPI 3 document of the dev server (`GET /openapi.json`), generated from the manifest:
 * one operation per queue-based function (runsync, and the status route that follows a slow
 * runsync) and one per load-balanced route. Request schemas come from the functions' parameters
 * when discovery reports them (`parameters`/`params` on a discovered function); otherwise the body
 * is a free object.
 */
import type { DiscoveredFunction, Manifest } from "../../core/types.ts";
import { buildRouteTable, preferredAlias, type RouteTable } from "./routes-table.ts";

/** A function parameter as discovery may report it. */
export interface FunctionParam {
  name: string;
  /** The annotation as written (`str`, `int | None`, `list[str]`, `Optional[float]`). */
  annotation?: string | null;
  required?: boolean;
  default?: unknown;
  /** `*args` / `**kwargs` and the like. */
  kind?: string;
}

type Schema = Record<string, unknown>;

/** JSON schema for a Python annotation (best effort; unknown → no constraint). */
export function schemaForAnnotation(annotation: string | null | undefined): Schema {
  if (!annotation) return {};
  let text = annotation.trim().replace(/^typing\./, "");
  const optional = /^Optional\[(.*)\]$/.exec(text);
  if (optional) return { ...schemaForAnnotation(optional[1]), nullable: true };
  const union = splitTopLevel(text, "|");
  if (union.length > 1) {
    const parts = union.filter((p) => p !== "None" && p !== "NoneType");
    const nullable = parts.length < union.length;
    const base = parts.length === 1 ? schemaForAnnotation(parts[0]) : { anyOf: parts.map(schemaForAnnotation) };
    return nullable ? { ...base, nullable: true } : base;
  }
  const unionGeneric = /^Union\[(.*)\]$/.exec(text);
  if (unionGeneric) return schemaForAnnotation(splitTopLevel(unionGeneric[1]!, ",").join(" | "));
  const generic = /^(\w+)\[(.*)\]$/.exec(text);
  const head = (generic?.[1] ?? text).replace(/^typing\./, "");
  text = head;
  switch (head) {
    case "str":
      return { type: "string" };
    case "int":
      return { type: "integer" };
    case "float":
      return { type: "number" };
    case "bool":
      return { type: "boolean" };
    case "list":
    case "List":
    case "tuple":
    case "Tuple":
    case "set":
    case "Set":
    case "Sequence": {
      const items = generic ? splitTopLevel(generic[2]!, ",")[0] : undefined;
      return { type: "array", items: items && items !== "..." ? schemaForAnnotation(items) : {} };
    }
    case "dict":
    case "Dict":
    case "Mapping": {
      const value = generic ? splitTopLevel(generic[2]!, ",")[1] : undefined;
      return { type: "object", additionalProperties: value ? schemaForAnnotation(value) : true };
    }
    case "Literal": {
      const values = generic ? splitTopLevel(generic[2]!, ",").map(literalValue) : [];
      return { enum: values };
    }
    default:
      return {};
  }
}

function literalValue(text: string): unknown {
  try {
    return JSON.parse(text.replace(/^'(.*)'$/, '"$1"'));
  } catch {
    return text;
  }
}

function splitTopLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of text) {
    if (char === "[" || char === "(") depth++;
    if (char === "]" || char === ")") depth--;
    if (char === separator && depth === 0) {
      parts.push(current.trim());
      current = "";
    } else current += char;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

/** The parameters discovery reported for a function, if it reports any. */
export function functionParams(fn: DiscoveredFunction | undefined): FunctionParam[] | undefined {
  const raw = (fn as unknown as { parameters?: unknown; params?: unknown } | undefined)?.parameters ?? (fn as { params?: unknown } | undefined)?.params;
  if (!Array.isArray(raw)) return undefined;
  return raw
    .map((p): FunctionParam | undefined => (typeof p === "string" ? { name: p } : p && typeof p === "object" && typeof p.name === "string" ? (p as FunctionParam) : undefined))
    .filter((p): p is FunctionParam => Boolean(p));
}

/** The object schema of a function's keyword arguments; a free object when unknown. */
export function paramsSchema(params: FunctionParam[] | undefined): Schema {
  if (!params) return { type: "object", additionalProperties: true, description: "Keyword arguments of the function." };
  const named = params.filter((p) => !p.kind || p.kind === "positional_or_keyword" || p.kind === "keyword_only" || p.kind === "POSITIONAL_OR_KEYWORD" || p.kind === "KEYWORD_ONLY");
  const hasVarKw = params.some((p) => p.kind === "var_keyword" || p.kind === "VAR_KEYWORD" || p.name.startsWith("**"));
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  for (const p of named) {
    if (p.name === "self" || p.name.startsWith("*")) continue;
    const schema = schemaForAnnotation(p.annotation);
    if (p.default !== undefined && isJsonValue(p.default)) schema.default = p.default;
    properties[p.name] = schema;
    const isRequired = p.required ?? p.default === undefined;
    if (isRequired) required.push(p.name);
  }
  return { type: "object", properties, ...(required.length ? { required } : {}), additionalProperties: hasVarKw };
}

function isJsonValue(value: unknown): boolean {
  return value === null || ["string", "number", "boolean"].includes(typeof value) || Array.isArray(value) || typeof value === "object";
}

const jobSchema: Schema = {
  type: "object",
  required: ["id", "status"],
  properties: {
    id: { type: "string" },
    status: { type: "string", enum: ["IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"] },
    output: { description: "The function's return value (COMPLETED)." },
    error: { description: "What went wrong (FAILED)." },
    delayTime: { type: "integer", description: "ms from submission until a worker started the job" },
    executionTime: { type: "integer", description: "ms the worker ran the job" },
    workerId: { type: "string" },
    statusUrl: { type: "string", description: "Present when the job was not final in time (202): poll it." },
  },
};

const errorSchema: Schema = {
  type: "object",
  properties: { error: { type: "object", properties: { code: { type: "string" }, message: { type: "string" } } } },
};

export interface OpenApiOptions {
  serverUrl?: string;
  /** Discovered functions (for parameters), by function name. */
  functions?: DiscoveredFunction[];
  table?: RouteTable;
}

export function generateOpenApi(manifest: Manifest, options: OpenApiOptions = {}): Record<string, unknown> {
  const table = options.table ?? buildRouteTable(manifest);
  const byName = new Map((options.functions ?? []).map((fn) => [`${fn.module}:${fn.name}`, fn]));
  const paths: Record<string, Record<string, unknown>> = {};
  const add = (path: string, method: string, operation: Record<string, unknown>) => {
    (paths[path] ??= {})[method.toLowerCase()] = operation;
  };

  add("/", "get", {
    operationId: "health",
    summary: "Health of the dev server and the state of each endpoint (lazy or provisioned).",
    tags: ["dev server"],
    responses: { "200": { description: "OK", content: { "application/json": { schema: { type: "object" } } } } },
  });

  const errors = {
    "400": { description: "Bad JSON, or input the function rejected", content: { "application/json": { schema: errorSchema } } },
    "404": { description: "Unknown route", content: { "application/json": { schema: errorSchema } } },
  };

  for (const [module, entry] of [...table.modules].sort(([a], [b]) => a.localeCompare(b))) {
    const alias = preferredAlias(table, module);
    const several = entry.qb.length > 1;
    for (const target of entry.qb) {
      const base = several ? `/${alias}/${target.function}` : `/${alias}`;
      const params = functionParams(byName.get(`${module}:${target.function}`));
      add(`${base}/runsync`, "post", {
        operationId: `${target.function}_runsync`,
        summary: `Run ${target.function} (queue-based endpoint "${target.endpoint}") and wait for its result.`,
        description:
          "The body is the function's keyword arguments, bare or as {\"input\": {...}}. Deploys the endpoint on its first call (lazy mode). " +
          "Answers 202 with the job id and a status URL when the job is not final in time.",
        tags: [target.endpoint],
        requestBody: {
          required: false,
          content: { "application/json": { schema: { oneOf: [paramsSchema(params), { type: "object", required: ["input"], properties: { input: paramsSchema(params) } }] } } },
        },
        responses: {
          "200": { description: "The final job", content: { "application/json": { schema: jobSchema } } },
          "202": { description: "Not final yet: poll statusUrl", content: { "application/json": { schema: jobSchema } } },
          ...errors,
        },
      });
      add(`${base}/status/{jobId}`, "get", {
        operationId: `${target.function}_status`,
        summary: `Status of a ${target.function} job.`,
        tags: [target.endpoint],
        parameters: [{ name: "jobId", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "The job", content: { "application/json": { schema: jobSchema } } }, ...errors },
      });
    }
    for (const route of entry.lb) {
      const path = `/${alias}${route.path.replace(/:(\w+)/g, "{$1}")}`;
      const pathParams = [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
      const params = functionParams(byName.get(`${module}:${route.function}`));
      const hasBody = route.method === "POST" || route.method === "PUT" || route.method === "PATCH";
      const schema = paramsSchema(params);
      const queryParams =
        !hasBody && params
          ? Object.entries((schema.properties ?? {}) as Record<string, Schema>)
              .filter(([name]) => !pathParams.some((p) => p.name === name))
              .map(([name, s]) => ({ name, in: "query", required: ((schema.required as string[] | undefined) ?? []).includes(name), schema: s }))
          : [];
      add(path, route.method, {
        operationId: `${route.function}_${route.method.toLowerCase()}`,
        summary: `${route.method} ${route.path} of load-balanced endpoint "${route.endpoint}" (${route.function}).`,
        tags: [route.endpoint],
        ...(pathParams.length || queryParams.length ? { parameters: [...pathParams, ...queryParams] } : {}),
        ...(hasBody ? { requestBody: { required: false, content: { "application/json": { schema } } } } : {}),
        responses: { "200": { description: "The route's answer", content: { "application/json": { schema: {} } } }, ...errors },
      });
    }
  }

  return {
    openapi: "3.0.3",
    info: {
      title: `${manifest.app} (svc dev server)`,
      version: manifest.fingerprint.slice(7, 19),
      description: "Local development server of svc. Endpoint functions run on the platform's serverless compute, as live- endpoints.",
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    paths,
  };
}
