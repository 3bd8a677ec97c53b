/** Named keys (`apiKeys`, `apiKeyCreate`, `apiKeyRevoke`; ../keys/keys.ts) and the audit log (`auditLog`). */
import { z } from "zod";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { KeyView } from "../keys/keys.ts";
import { parseInput } from "./inputs.ts";
import { iso } from "./views.ts";

const keyInputSchema = z.strictObject({ name: z.string(), role: z.string(), app: z.string().nullish(), env: z.string().nullish() });
const auditLimitSchema = z.number().int().min(1).max(10_000);

const keyView = (k: KeyView) => ({ ...k, createdAt: iso(k.createdAt) });

export function keyResolvers(ctx: PlatformContext) {
  return {
    apiKeys: () => ctx.keys.list().map(keyView),
    apiKeyCreate: ({ input }: Record<string, unknown>) => {
      const { key, secret } = ctx.keys.create(parseInput(keyInputSchema, input, "key input"));
      return { key: keyView(key), secret };
    },
    apiKeyRevoke: ({ name }: Record<string, unknown>) => {
      if (!ctx.keys.revoke(String(name))) throw errors.NOT_FOUND("Key", String(name), "`svc key list` shows the keys there are.");
      return true;
    },
    auditLog: ({ limit }: Record<string, unknown>) =>
      ctx.store.audit.list(limit === undefined || limit === null ? 100 : parseInput(auditLimitSchema, limit, "limit")).map((a) => ({ ...a, at: iso(a.at) })),
  };
}
