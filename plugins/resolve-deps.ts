/**
 * svc:resolve-deps — the requirement set of the app: `requirements.txt` at the root (with `-r`
 * includes) plus every endpoint's `dependencies=[...]`, deduped by PEP 503 name keeping the most
 * specific spec. pip options found in the files (`--index-url`, …) are kept for svc:pip-install.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { BuildContext, Requirement, SvcPlugin } from "../core/types.ts";
import { mergeRequirements, namedRequirements, readRequirementsFile, withRequirementsCache } from "./_requirements.ts";

export const PLUGIN_NAME = "svc:resolve-deps";

export interface ResolvedDepsMeta {
  /** pip options from requirements files, ready for argv. */
  pipOptions: string[];
}

// What this plugin hands svc:pip-install in ctx.meta: docs/plugins.md, "Passing data between plugins".
declare module "../core/types.ts" {
  interface PluginMeta {
    [PLUGIN_NAME]: ResolvedDepsMeta;
  }
}

export async function collectRequirements(ctx: BuildContext): Promise<{ requirements: Requirement[]; pipOptions: string[] }> {
  const collected: Requirement[] = [];
  const pipOptions: string[] = [];
  const file = join(ctx.root, "requirements.txt");
  if (existsSync(file)) {
    const read = new Set<string>(); // the file and its `-r` includes
    const parsed = await readRequirementsFile(file, ctx.root, read);
    for (const included of read) ctx.dependencies.files.add(included);
    collected.push(...parsed.requirements);
    pipOptions.push(...parsed.pipOptions);
  }
  const declared = ctx.endpoints
    .flatMap((endpoint) => (endpoint.dependencies ?? []).map((spec) => ({ spec: spec.trim(), source: `endpoint ${endpoint.name}` })))
    .filter(({ spec }) => spec);
  collected.push(...(await namedRequirements(declared)));
  return { requirements: await mergeRequirements(collected), pipOptions };
}

export function resolveDeps(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.resolveDependencies.tapPromise(PLUGIN_NAME, async (previous, ctx) => {
        return withRequirementsCache(ctx, async () => {
          const { requirements, pipOptions } = await collectRequirements(ctx);
          ctx.meta.set(PLUGIN_NAME, { pipOptions } satisfies ResolvedDepsMeta);
          // requirements added by an earlier tap are kept and merged too
          return mergeRequirements([...previous, ...requirements]);
        });
      });
    },
  };
}
