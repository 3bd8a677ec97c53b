/**
 * svc:upload — resolves the app and environment (reference/platform-api.md section 6: no app →
 * create it and the `--env` environment, default `production`; unknown `--env` → create it; one
 * environment → use it; several and no `--env` → ENVIRONMENT_AMBIGUOUS), then uploads the artifact.
 * Content-addressed: an artifact the platform already has (same sha256) is not sent again. The
 * build's manifest gets `git: {commit, dirty}` when the app is in a git repository (deploy history).
 */
import { resolveDeployTarget } from "../core/client/environments.ts";
import { errors } from "../core/errors.ts";
import type { SvcPlugin } from "../core/types.ts";
import { platformClient } from "./_platform.ts";
import { gitSource } from "./_git-source.ts";

export const PLUGIN_NAME = "svc:upload";

/** The first 12 hex digits of an artifact's sha256, for log lines. */
export const shortSha = (sha256: string): string => sha256.replace(/^sha256:/, "").slice(0, 12);

/** The log line after an upload (content-addressed: `skipped` when the platform had the bytes). */
export const uploadedLine = (sha256: string, skipped: boolean): string =>
  skipped ? `  the platform already has artifact ${shortSha(sha256)}: upload skipped` : `  uploaded artifact ${shortSha(sha256)}`;

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

        // one line (or a bar on a terminal) while the bytes go; a content-addressed hit sends none
        const bar = ctx.logger.progress(
          `  uploading the artifact (${shortSha(ctx.artifact.sha256)}) to ${appName}/${target.environment.name}`,
          ctx.artifact.size,
        );
        // the build's record carries the git commit it came from (the artifact's own manifest does not: its bytes stay the same)
        const git = await gitSource(ctx.root);
        const manifest = git ? { ...ctx.manifest, git } : ctx.manifest;
        const result = await client.uploadArtifact(target.app.id, ctx.artifact, manifest, bar.add).finally(() => bar.end());
        ctx.logger.info(uploadedLine(ctx.artifact.sha256, result.skipped));
        ctx.upload = { buildId: result.buildId, skipped: result.skipped };
        return result.buildId;
      });
    },
  };
}
