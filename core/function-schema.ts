/**
 * JSON Schemas of endpoint functions, from the parameters and return annotations discovery read
 * from the AST (the manifest's `params` / `returns`, docs/manifest.md). One mapping from Python
 * annotations to schemas, used by the dev server's /openapi.json (/docs) and by `svc client`'s
 * TypeScript types. Module-level TypedDicts, dataclasses and Enums the annotations name (discovery's
 * `types`) become object and enum schemas, as the runtime checks them (runtime/python/svc/_input_check.py).
 * Best effort: an annotation it does not know puts no constraint.
 */
import type { FunctionParam, PythonTypeDef } from "./types.ts";

/** The classes annotations may name, by name (a function's `types` in the manifest). */
export type TypeDefs = Readonly<Record<string, PythonTypeDef>>;

export type JsonSchema = Record<string, unknown>;

/** A parameter as far as the schema needs it (kind and required default to a plain named parameter). */
export type ParamLike = Pick<FunctionParam, "name"> & Partial<Omit<FunctionParam, "name">>;

const LIST_OF = /^(?:typing\.)?(?:List|list|Sequence)\[(.*)\]$/s;

/**
 * A function's parameters and return as one job sees them. A batched endpoint's function
 * (`batch=`, docs/platform.md "Request batching") takes and returns lists, one element per job:
 * each job sends one element of each parameter and gets one element of the return.
 */
export function perJob<F extends { params?: readonly ParamLike[]; returns?: string }>(fn: F, batched: boolean): F {
  if (!batched) return fn;
  const element = (annotation: string | undefined) => (annotation ? LIST_OF.exec(annotation.trim())?.[1] : undefined);
  return { ...fn, ...(fn.params ? { params: fn.params.map((p) => ({ ...p, annotation: element(p.annotation) })) } : {}), returns: element(fn.returns) };
}

/** JSON schema for a Python annotation (best effort; unknown → no constraint). */
export function schemaForAnnotation(annotation: string | null | undefined, types: TypeDefs = {}, seen: ReadonlySet<string> = new Set()): JsonSchema {
  if (!annotation) return {};
  const schemaFor = (text: string | undefined) => schemaForAnnotation(text, types, seen);
  const text = annotation.trim().replace(/^typing\./, "");
  const optional = /^Optional\[(.*)\]$/.exec(text);
  if (optional) return { ...schemaFor(optional[1]), nullable: true };
  const union = splitTopLevel(text, "|");
  if (union.length > 1) {
    const parts = union.filter((p) => p !== "None" && p !== "NoneType");
    const nullable = parts.length < union.length;
    const base = parts.length === 1 ? schemaFor(parts[0]) : { anyOf: parts.map((part) => schemaFor(part)) };
    return nullable ? { ...base, nullable: true } : base;
  }
  const unionGeneric = /^Union\[(.*)\]$/.exec(text);
  if (unionGeneric) return schemaFor(splitTopLevel(unionGeneric[1]!, ",").join(" | "));
  const generic = /^(\w+)\[(.*)\]$/.exec(text);
  const head = generic?.[1] ?? text;
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
      return { type: "array", items: items && items !== "..." ? schemaFor(items) : {} };
    }
    case "dict":
    case "Dict":
    case "Mapping": {
      const value = generic ? splitTopLevel(generic[2]!, ",")[1] : undefined;
      return { type: "object", additionalProperties: value ? schemaFor(value) : true };
    }
    case "Literal": {
      const values = generic ? splitTopLevel(generic[2]!, ",").map(literalValue) : [];
      return { enum: values };
    }
    default:
      return types[head] && !seen.has(head) ? schemaForType(head, types[head], types, new Set([...seen, head])) : {};
  }
}

/** A TypedDict or dataclass: an object of its fields, no others; an Enum: its values. */
function schemaForType(name: string, type: PythonTypeDef, types: TypeDefs, seen: ReadonlySet<string>): JsonSchema {
  if (type.kind === "Enum") return { enum: [...type.values], title: name };
  const properties: Record<string, JsonSchema> = {};
  for (const field of type.fields) properties[field.name] = schemaForAnnotation(field.annotation, types, seen);
  const required = type.fields.filter((f) => f.required).map((f) => f.name);
  return { type: "object", title: name, properties, ...(required.length ? { required } : {}), additionalProperties: false };
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

/** Kinds a JSON input can fill by name (`positional_only` and `*args` cannot be). */
const NAMED_KINDS = new Set(["positional_or_keyword", "keyword_only"]);

/**
 * The object schema of a function's keyword arguments (a job's `input`, a route's body or query);
 * a free object when the parameters are unknown. `**kwargs` allows other names.
 */
export function paramsSchema(params: readonly ParamLike[] | undefined, types: TypeDefs = {}): JsonSchema {
  if (!params) return { type: "object", additionalProperties: true, description: "Keyword arguments of the function." };
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const p of params) {
    if (!NAMED_KINDS.has(p.kind ?? "positional_or_keyword") || p.name === "self") continue;
    const schema = schemaForAnnotation(p.annotation, types);
    if (p.annotation && Object.keys(schema).length === 0) schema.description = `Python annotation: ${p.annotation}`;
    if (p.default !== undefined) schema.default = p.default;
    else if (p.defaultSource) schema.description = [schema.description, `default: ${p.defaultSource}`].filter(Boolean).join("; ");
    properties[p.name] = schema;
    if (p.required ?? (p.default === undefined && p.defaultSource === undefined)) required.push(p.name);
  }
  const additionalProperties = params.some((p) => p.kind === "var_keyword");
  return { type: "object", properties, ...(required.length ? { required } : {}), additionalProperties };
}
