/**
 * Secrets in GraphQL: `secretCreate(input: {name, value})` answers the secret without its value,
 * `secretDelete(name)`, and `myself { secrets { id name createdAt } }` (names only: no route ever
 * answers a value). docs/platform.md, "Secrets".
 */
import { z } from "zod";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { SecretRow } from "../store/secrets.ts";

const secretCreateSchema = z.object({ name: z.string(), value: z.string(), description: z.string().nullish() }).strict();

const secretView = (s: SecretRow) => ({ id: s.id, name: s.name, createdAt: new Date(s.createdAt).toISOString() });

export function secretResolvers(ctx: PlatformContext) {
  return {
    listSecrets: () => ctx.secrets.list().map(secretView),
    mutations: {
      secretCreate: ({ input }: Record<string, unknown>) => {
        const parsed = secretCreateSchema.safeParse(input);
        // the message never quotes the input: it holds the value
        if (!parsed.success)
          throw errors.SECRET_INVALID(`the input must be {name, value} strings (${parsed.error.issues.map((i) => i.path.join(".") || "input").join(", ")})`);
        return secretView(ctx.secrets.create(parsed.data.name, parsed.data.value));
      },
      secretDelete: ({ name }: Record<string, unknown>) => {
        if (!ctx.secrets.remove(String(name))) throw errors.SECRET_NOT_FOUND(String(name));
        return true;
      },
    },
  };
}
