/**
 * svc:group-endpoints — turns discovered functions into endpoint specs, one per endpoint name:
 * queue-based (one `@Endpoint` function each) or load-balanced (one `Endpoint` object with routes).
 * Validates the uniqueness rules and normalises the decorator arguments with the one Endpoint
 * schema, core/endpoint-schema.ts (docs/contracts.md §3).
 */
import { EndpointArgumentError, endpointNameOf, normaliseEndpointArguments, type EndpointSettingsFromArguments } from "../core/endpoint-schema.ts";
import { errors } from "../core/errors.ts";
import type { DiscoveredFunction, EndpointDeclaration, EndpointSpec, EndpointType, SourceLocation, SvcPlugin } from "../core/types.ts";

export const PLUGIN_NAME = "svc:group-endpoints";

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
    const settings = normaliseArguments(d, group.type);
    if (settings.batch && first.isGenerator)
      throw errors.ENDPOINT_ARGUMENT_INVALID(
        locOf(d),
        `batch needs a function that returns one result per input, and ${first.name}() is a generator (a batched function cannot stream).`,
      );
    return {
      name,
      type: group.type,
      file: d.file,
      module: first.module,
      line: d.line,
      functions: group.functions,
      ...settings,
      ...(first.runtime ? { runtime: first.runtime } : {}),
    };
  });
}

function endpointName(d: EndpointDeclaration): string {
  try {
    return endpointNameOf(d.args);
  } catch (error) {
    throw asCatalogueError(d, error);
  }
}

/** Decorator arguments → the endpoint's hardware, scaling, timeout, env and dependencies (core/endpoint-schema.ts). */
function normaliseArguments(d: EndpointDeclaration, type: EndpointType): EndpointSettingsFromArguments {
  try {
    return normaliseEndpointArguments(d.args, type);
  } catch (error) {
    throw asCatalogueError(d, error);
  }
}

function asCatalogueError(d: EndpointDeclaration, error: unknown): unknown {
  return error instanceof EndpointArgumentError ? errors.ENDPOINT_ARGUMENT_INVALID(locOf(d), `${error.message}.`) : error;
}
