/** Shared by svc:upload, svc:provision and svc:configure: the run's platform client and target. */
import type { PlatformClient } from "../core/client/index.ts";
import { errors } from "../core/errors.ts";
import type { BuildContext } from "../core/types.ts";

/** ctx.client (the CLI sets it), or a client for PLATFORM_API_URL; with neither, PLATFORM_NOT_CONFIGURED (docs/deploy.md). */
export async function platformClient(ctx: BuildContext): Promise<PlatformClient> {
  if (ctx.client) return ctx.client;
  // Imported on first use: `svc build` never needs the HTTP and GraphQL clients.
  const { createPlatformClient, resolvePlatform } = await import("../core/client/index.ts");
  ctx.client = createPlatformClient(await resolvePlatform());
  return ctx.client;
}

/** The app, environment and build svc:upload resolved; a clear error when a stage before it was removed. */
export function deployTarget(
  ctx: BuildContext,
  stage: string,
): { app: { id: string; name: string }; environment: { id: string; name: string }; buildId: string } {
  if (!ctx.app || !ctx.environment || !ctx.buildId) {
    throw errors.PLATFORM_ERROR(
      stage,
      "no uploaded build in this run (svc:upload did not run or was replaced by a plugin that did not set ctx.app, ctx.environment and ctx.buildId)",
    );
  }
  return { app: ctx.app, environment: ctx.environment, buildId: ctx.buildId };
}
