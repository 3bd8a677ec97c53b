/** The body of /run and /runsync (reference section 1), validated with zod. */
import { z } from "zod";
import { errors } from "../../core/errors.ts";
import { formatZodIssues } from "../../core/manifest.ts";

const DAY = 24 * 3600_000;

export const runBodySchema = z.object({
  input: z.unknown().refine((v) => v !== undefined, "input is required"),
  webhook: z.url({ protocol: /^https?$/ }).optional(),
  policy: z
    .object({
      executionTimeout: z
        .number()
        .int()
        .min(5000)
        .max(7 * DAY)
        .optional(),
      ttl: z
        .number()
        .int()
        .min(10_000)
        .max(7 * DAY)
        .optional(),
      lowPriority: z.boolean().optional(),
    })
    .optional(),
  // The hosted platform also accepts s3Config; ignored here.
  s3Config: z.unknown().optional(),
});

export type RunBody = z.infer<typeof runBodySchema>;

export const DEFAULT_TTL_MS = DAY;

export function parseRunBody(value: unknown): RunBody {
  // The common body, `{"input": ...}` alone, needs no schema run.
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    let keys = 0;
    for (const _ in value) keys++;
    const input = (value as { input?: unknown }).input;
    if (keys === 1 && input !== undefined && Object.hasOwn(value, "input")) return { input };
  }
  const result = runBodySchema.safeParse(value);
  if (!result.success) throw errors.BAD_REQUEST(`Invalid request body: ${formatZodIssues(result.error)}`);
  return result.data;
}
