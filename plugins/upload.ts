/**
 * svc:upload — resolves the app and environment (reference/platform-api.md section 6: no app →
 * create it and the `--env` environment, default `production`; unknown `--env` → create it; one
 * environment → use it; several and no `--env` → ENVIRONMENT_AMBIGUOUS), then uploads the artifact.
 * Content-addressed: an artifact the platform already has (same sha256) is not sent again.
 */
import { resolveDeployTarget } from "../core/client/index.ts";
import { errors, formatBytes } from "../core/errors.ts";
import type { SvcPlugin } from "../core/types.ts";
import { platformClient } from "./_platform.ts";

export const PLUGIN_NAME = "svc:upload";

export function upload(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.upload.tapPromise(PLUGIN_NAME, async (_buildId, ctx) => {
        if (!ctx.artifact || !ctx.manifest) throw errors.BUILD_MISSING(ctx.root);
        const client = await platformClient(ctx);
        const appName = ctx.manifest.app;
        const target = await resolveDeployTarget(client, appName, ctx.options.env);
        if (target.createdApp) ctx.logger.info(`  created app ${appName} on ${client.url}`);
        if (target.createdEnvironment) ctx.logger.info(`  created environment ${target.environment.name}`);
        ctx.app = { id: target.app.id, name: target.app.name };
        ctx.environment = { id: target.environment.id, name: target.environment.name };

        const short = ctx.artifact.sha256.replace(/^sha256:/, "").slice(0, 12);
        ctx.logger.info(`  uploading ${formatBytes(ctx.artifact.size)} artifact (${short}) to ${appName}/${target.environment.name}`);
        const result = await client.uploadArtifact(target.app.id, ctx.artifact, ctx.manifest);
        ctx.logger.info(result.skipped ? `  the platform already has artifact ${short}: upload skipped` : `  uploaded artifact ${short}`);
        ctx.upload = { buildId: result.buildId, skipped: result.skipped };
        return result.buildId;
      });
    },
  };
}
