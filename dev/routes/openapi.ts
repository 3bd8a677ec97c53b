/**
 * The OpenAPI 3 document of the dev server (`GET /openapi.json`), generated from the manifest:
 * one operation per queue-based function (runsync, and the status route that follows a slow
 * runsync) and one per load-balanced route. Request and response schemas come from each function's
 * parameters and return annotation in the manifest (discovery reads them from the AST; the mapping
 * is core/function-schema.ts); a function with no `params` takes a free object.
 */
import { paramsSchema, perJob, schemaForAnnotation, type JsonSchema } from "../../core/function-schema.ts";
import type { Manifest } from "../../core/types.ts";
import { buildRouteTable, preferredAlias, type RouteTable } from "./routes-table.ts";

type Schema = JsonSchema;

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

/** The job schema with `output` typed by the function's return annotation. */
const jobWithOutput = (returns: string | undefined): Schema =>
  returns
    ? {
        ...jobSchema,
        properties: {
          ...(jobSchema.properties as Schema),
          output: { ...schemaForAnnotation(returns), description: `The function's return value (COMPLETED): ${returns}.` },
        },
      }
    : jobSchema;

const errorSchema: Schema = {
  type: "object",
  properties: { error: { type: "object", properties: { code: { type: "string" }, message: { type: "string" } } } },
};

export interface OpenApiOptions {
  serverUrl?: string;
  table?: RouteTable;
}

export function generateOpenApi(manifest: Manifest, options: OpenApiOptions = {}): Record<string, unknown> {
  const table = options.table ?? buildRouteTable(manifest);
  const byName = new Map(
    Object.values(manifest.endpoints).flatMap((endpoint) =>
      endpoint.functions.map((fn) => [`${fn.module}:${fn.name}`, perJob(fn, Boolean(endpoint.batch))] as const),
    ),
  );
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
      const fn = byName.get(`${module}:${target.function}`);
      const params = fn?.params;
      add(`${base}/runsync`, "post", {
        operationId: `${target.function}_runsync`,
        summary: `Run ${target.function} (queue-based endpoint "${target.endpoint}") and wait for its result.`,
        description:
          'The body is the function\'s keyword arguments, bare or as {"input": {...}}. Deploys the endpoint on its first call (lazy mode). ' +
          "Answers 202 with the job id and a status URL when the job is not final in time.",
        tags: [target.endpoint],
        requestBody: {
          required: false,
          content: {
            "application/json": {
              schema: {
                oneOf: [paramsSchema(params, fn?.types), { type: "object", required: ["input"], properties: { input: paramsSchema(params, fn?.types) } }],
              },
            },
          },
        },
        responses: {
          "200": { description: "The final job", content: { "application/json": { schema: jobWithOutput(fn?.returns) } } },
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
      const fn = byName.get(`${module}:${route.function}`);
      const params = fn?.params;
      const hasBody = route.method === "POST" || route.method === "PUT" || route.method === "PATCH";
      const schema = paramsSchema(params, fn?.types);
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
        responses: { "200": { description: "The route's answer", content: { "application/json": { schema: schemaForAnnotation(fn?.returns) } } }, ...errors },
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
