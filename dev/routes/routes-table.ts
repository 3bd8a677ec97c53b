/**
 * Which dev-server path reaches which endpoint function (pure; built from the manifest).
 *
 * A worker module is addressed by its dotted path (`workers.hello`) or by its last segment
 * (`hello`). The short name only works while exactly one module of the app ends with it; the
 * dotted path always works. Paths:
 *
 *   POST /<module>/runsync                 the module's queue-based function (when it has one)
 *   POST /<module>/<function>/runsync      a named queue-based function (a module with several)
 *   GET  /<module>/status/<job id>         a job started by runsync that was not final in time
 *   GET  /<module>/<function>/status/<id>
 *   <METHOD> /<module>/<route path>        a route of the module's load-balanced endpoint
 *
 * Queue-based paths win over a load-balanced route with the same shape in the same module.
 */
import { errors, type SvcError } from "../../core/errors.ts";
import type { HttpMethod, Manifest } from "../../core/types.ts";

export interface QbTarget {
  endpoint: string;
  module: string;
  function: string;
}

export interface LbTarget {
  endpoint: string;
  module: string;
  function: string;
  method: HttpMethod;
  /** The route path as declared (`/items/{id}`). */
  path: string;
}

export interface ModuleEntry {
  module: string;
  qb: QbTarget[];
  lb: LbTarget[];
}

export interface RouteTable {
  /** Dotted module path → entry. */
  modules: Map<string, ModuleEntry>;
  /** Alias (dotted path or last segment) → dotted module paths it may mean. */
  aliases: Map<string, string[]>;
}

export const lastSegment = (module: string): string => module.slice(module.lastIndexOf(".") + 1);

export function buildRouteTable(manifest: Pick<Manifest, "endpoints">): RouteTable {
  const modules = new Map<string, ModuleEntry>();
  const entry = (module: string) => {
    let found = modules.get(module);
    if (!found) modules.set(module, (found = { module, qb: [], lb: [] }));
    return found;
  };
  for (const endpoint of Object.values(manifest.endpoints)) {
    for (const fn of endpoint.functions) {
      // A function is addressed through the module that defines it (for QB that is the endpoint's file).
      const module = fn.module || endpoint.module;
      if (endpoint.type === "QB") entry(module).qb.push({ endpoint: endpoint.name, module, function: fn.name });
      else if (fn.httpMethod && fn.httpPath)
        entry(module).lb.push({ endpoint: endpoint.name, module, function: fn.name, method: fn.httpMethod, path: fn.httpPath });
    }
  }
  const aliases = new Map<string, string[]>();
  const addAlias = (alias: string, module: string) => {
    const list = aliases.get(alias) ?? [];
    if (!list.includes(module)) list.push(module);
    aliases.set(alias, list);
  };
  for (const module of [...modules.keys()].sort()) {
    addAlias(module, module);
    addAlias(lastSegment(module), module);
  }
  // A dotted path always means itself, even when it is also another module's last segment.
  for (const module of modules.keys()) aliases.set(module, [module]);
  return { modules, aliases };
}

/** The name the docs and the startup banner use for a module: the short one when unambiguous. */
export function preferredAlias(table: RouteTable, module: string): string {
  const short = lastSegment(module);
  const meant = table.aliases.get(short);
  return meant && meant.length === 1 && meant[0] === module ? short : module;
}

export type Resolution =
  | { kind: "qb-run"; target: QbTarget }
  | { kind: "qb-status"; target: QbTarget; jobId: string }
  | { kind: "lb"; target: LbTarget; params: Record<string, string> }
  | { kind: "error"; error: SvcError };

/** Resolves `<METHOD> <path>` (path without query string) against the table. */
export function resolveRoute(table: RouteTable, method: string, pathname: string): Resolution {
  const segments = pathname.split("/").filter(Boolean).map(safeDecode);
  const [alias, ...rest] = segments;
  if (!alias) return { kind: "error", error: errors.NOT_FOUND("Route", `${method} ${pathname}`) };
  const meant = table.aliases.get(alias);
  if (!meant) {
    const known = [...table.modules.keys()].map((m) => preferredAlias(table, m));
    return { kind: "error", error: errors.UNKNOWN_MODULE(alias, known) };
  }
  if (meant.length > 1)
    return {
      kind: "error",
      error: errors.AMBIGUOUS(`"${alias}" names several modules (${meant.join(", ")}); use the dotted module path, e.g. /${meant[0]}/...`),
    };
  const entry = table.modules.get(meant[0]!)!;
  const upper = method.toUpperCase();

  if (entry.qb.length > 0) {
    const qb = resolveQb(entry, upper, rest);
    if (qb) return qb;
  }
  if (entry.lb.length > 0) {
    const path = `/${rest.join("/")}`;
    const matching = entry.lb.map((route) => ({ route, params: matchPath(route.path, path) })).filter((m) => m.params);
    const hit = matching.find((m) => m.route.method === upper || (upper === "HEAD" && m.route.method === "GET"));
    if (hit) return { kind: "lb", target: hit.route, params: hit.params! };
    if (matching.length > 0) {
      const allowed = matching.map((m) => m.route.method);
      return { kind: "error", error: errors.METHOD_NOT_ALLOWED(`${path} of ${entry.module} accepts ${allowed.join(", ")}, not ${upper}.`) };
    }
  }
  return {
    kind: "error",
    error: errors.NOT_FOUND("Route", `${method} ${pathname}`, `Module ${entry.module} has no such route: /openapi.json lists its routes.`),
  };
}

function resolveQb(entry: ModuleEntry, method: string, rest: string[]): Resolution | undefined {
  const byName = (name: string) => entry.qb.find((t) => t.function === name);
  const only = (): QbTarget | Resolution => {
    if (entry.qb.length === 1) return entry.qb[0]!;
    return {
      kind: "error",
      error: errors.AMBIGUOUS(
        `Module ${entry.module} has several queue-based functions (${entry.qb.map((t) => t.function).join(", ")}); use /<module>/<function>/runsync.`,
      ),
    };
  };
  const isError = (value: QbTarget | Resolution): value is Resolution => "kind" in value;
  const wrongMethod = (expected: string): Resolution => ({ kind: "error", error: errors.METHOD_NOT_ALLOWED(`Use ${expected} for this route.`) });

  // /<module>/runsync, /<module>/<fn>/runsync
  if (rest.length === 1 && rest[0] === "runsync") {
    const target = only();
    if (isError(target)) return target;
    return method === "POST" ? { kind: "qb-run", target } : wrongMethod("POST");
  }
  if (rest.length === 2 && rest[1] === "runsync" && byName(rest[0]!)) {
    return method === "POST" ? { kind: "qb-run", target: byName(rest[0]!)! } : wrongMethod("POST");
  }
  // /<module>/status/<id>, /<module>/<fn>/status/<id>
  if (rest.length === 2 && rest[0] === "status") {
    const target = only();
    if (isError(target)) return target;
    return method === "GET" ? { kind: "qb-status", target, jobId: rest[1]! } : wrongMethod("GET");
  }
  if (rest.length === 3 && rest[1] === "status" && byName(rest[0]!)) {
    return method === "GET" ? { kind: "qb-status", target: byName(rest[0]!)!, jobId: rest[2]! } : wrongMethod("GET");
  }
  return undefined;
}

/** Matches a declared route path (`/items/{id}` or `/items/:id`) against a request path. */
export function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split("/").filter(Boolean);
  const got = path.split("/").filter(Boolean);
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    const param = /^\{(\w+)\}$/.exec(w)?.[1] ?? /^:(\w+)$/.exec(w)?.[1];
    if (param) params[param] = g;
    else if (w !== g) return undefined;
  }
  return params;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
