/** Resolver of templates (saveTemplate): an image and its environment that endpoints may name. */
import type { PlatformContext } from "../context.ts";
import { parseInput, templateInputSchema } from "./inputs.ts";
import type { Views } from "./views.ts";

export function templateResolvers(ctx: PlatformContext, views: Views) {
  return {
    saveTemplate: ({ input }: Record<string, unknown>) => {
      const t = parseInput(templateInputSchema, input, "template input");
      return views.templateView(
        ctx.store.templates.create({
          name: t.name,
          imageName: t.imageName,
          env: t.env ?? [],
          containerDiskInGb: t.containerDiskInGb ?? null,
          dockerArgs: t.dockerArgs ?? null,
          isServerless: t.isServerless ?? true,
        }),
      );
    },
  };
}
