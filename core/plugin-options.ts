/**
 * Plugin options checked against the plugin's own zod schema, as svc checks its config: a plugin
 * declares it with `definePlugin(factory, { options: z.strictObject({...}) })` and its options are
 * validated when the factory is called (from svc.config.ts's `["svc-plugin-x", {...}]` or a direct
 * call): an unknown key is PLUGIN_OPTIONS_INVALID naming the closest known one (`alow` → did you mean
 * `allow`?), a wrong type names the field. docs/plugins.md, "Options".
 */
import type { z } from "zod";
import { closestName } from "./closest.ts";
import { errors } from "./errors.ts";
import { formatZodIssues } from "./manifest.ts";

/** The keys an object schema knows (for did-you-mean), if it is one. */
function knownKeys(schema: z.ZodType): string[] {
  const shape = (schema as unknown as { shape?: Record<string, unknown> }).shape;
  return shape && typeof shape === "object" ? Object.keys(shape) : [];
}

/** The options as the schema parses them (defaults filled in), or PLUGIN_OPTIONS_INVALID. */
export function parsePluginOptions<T>(plugin: string, schema: z.ZodType<T>, options: unknown): T {
  const result = schema.safeParse(options ?? {});
  if (result.success) return result.data;
  const known = knownKeys(schema);
  const unknown = result.error.issues.flatMap((issue) => (issue.code === "unrecognized_keys" && issue.path.length === 0 ? issue.keys : []));
  const others = result.error.issues.filter((issue) => !(issue.code === "unrecognized_keys" && issue.path.length === 0));
  const lines = unknown.map((key) => {
    const closest = closestName(key, known);
    return `unknown option "${key}"${closest ? ` (did you mean "${closest}"?)` : ""}`;
  });
  if (others.length) lines.push(formatZodIssues({ ...result.error, issues: others } as z.ZodError));
  throw errors.PLUGIN_OPTIONS_INVALID(plugin, lines.join("; "), known);
}
