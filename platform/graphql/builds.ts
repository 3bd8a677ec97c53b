/** Resolvers of builds: the artifact upload (prepare, then finalize with its manifest), getBuild, endpoint URLs. */
import { errors } from "../../core/errors.ts";
import { parseManifest } from "../../core/manifest.ts";
import type { PlatformContext } from "../context.ts";
import { newSecret, sha256Hex } from "../_ids.ts";
import type { KeyScope } from "../worker-keys.ts";
import { ARTIFACT_ROUTE } from "../artifacts/receive.ts";
import { sha256Schema, uploadSizeSchema, urlsSchema, parseInput } from "./inputs.ts";
import { mustApp, mustBuild, safeJson } from "./_lookup.ts";
import { iso, type Views } from "./views.ts";

const UPLOAD_TTL_MS = 3600_000;

export function buildResolvers(ctx: PlatformContext, views: Views) {
  const { store } = ctx;
  return {
    getBuild: ({ id }: Record<string, unknown>, context?: { workerScope?: KeyScope }) => {
      const scope = context?.workerScope;
      if (scope && !ctx.workerKeys.readsBuild(scope, String(id)))
        throw errors.KEY_SCOPE(ctx.workerKeys.describe(scope), `getBuild(id: ${JSON.stringify(String(id))})`);
      const b = store.builds.get(String(id));
      return b ? views.buildView(b) : null;
    },
    prepareArtifactUpload: ({ appId, size, sha256 }: Record<string, unknown>) => {
      const app = mustApp(store, String(appId));
      const bytes = parseInput(uploadSizeSchema, size, "size");
      const expected = sha256 === undefined || sha256 === null ? null : parseInput(sha256Schema, String(sha256).replace(/^sha256:/, ""), "sha256");
      const existing = expected ? store.builds.artifact(expected) : undefined;
      const token = newSecret("upt_");
      const upload = store.builds.createUpload({
        appId: app.id,
        size: existing ? existing.size : bytes,
        expectedSha256: expected,
        sha256: existing ? existing.sha256 : null,
        tokenHash: sha256Hex(token),
        expiresAt: Date.now() + UPLOAD_TTL_MS,
      });
      return {
        uploadUrl: `${ctx.baseUrl()}${ARTIFACT_ROUTE}/${upload.objectKey}?token=${token}`,
        objectKey: upload.objectKey,
        expiresAt: iso(upload.expiresAt),
        alreadyUploaded: Boolean(existing),
      };
    },
    finalizeArtifactUpload: ({ objectKey, manifest }: Record<string, unknown>) => {
      const upload = store.builds.upload(String(objectKey));
      if (!upload) throw errors.NOT_FOUND("Upload", String(objectKey));
      if (!upload.sha256) throw errors.BAD_REQUEST(`Upload ${upload.objectKey} has no bytes yet: PUT the artifact to its uploadUrl first.`);
      const artifact = store.builds.artifact(upload.sha256);
      if (!artifact) throw errors.NOT_FOUND("Artifact", upload.sha256);
      mustApp(store, upload.appId);
      const value = typeof manifest === "string" ? safeJson(manifest) : manifest;
      const parsed = parseManifest(value);
      const build = store.builds.create({ appId: upload.appId, sha256: artifact.sha256, size: artifact.size, manifest: parsed as Record<string, unknown> });
      // its workers run here unless a remote backend (Ray) places them (its LB workers unpack when they start): unpack it while the client provisions
      if (!ctx.supervisor.remote) ctx.supervisor.local.prepare(build, artifact.path);
      return views.buildView(build);
    },
    setBuildEndpointUrls: ({ buildId, urls }: Record<string, unknown>) => {
      const build = mustBuild(store, String(buildId));
      const value = typeof urls === "string" ? safeJson(urls) : urls;
      const parsed = parseInput(urlsSchema, value, "urls");
      const manifest = { ...build.manifest, urls: { ...((build.manifest.urls as Record<string, string>) ?? {}), ...parsed } };
      store.builds.setManifest(build.id, manifest);
      return views.buildView({ ...build, manifest });
    },
  };
}
