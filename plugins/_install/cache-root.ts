/**
 * Where svc:pip-install keeps installed dependency trees: one folder per requirement set's content
 * key, shared by every app of the user (a second app with the same requirements installs nothing).
 * `SVC_CACHE_DIR`, else `$XDG_CACHE_HOME/svc`, else `~/.cache/svc`. docs/deploy.md, "Dependencies: uv or pip, one cache for every app".
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export function svcCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SVC_CACHE_DIR) return resolve(env.SVC_CACHE_DIR);
  return join(env.XDG_CACHE_HOME ? resolve(env.XDG_CACHE_HOME) : join(homedir(), ".cache"), "svc");
}

export const depsCacheRoot = (env: NodeJS.ProcessEnv = process.env): string => join(svcCacheDir(env), "deps");

/** svc:tar-pack's deflated chunks of content-addressed dependencies (plugins/_deflate-cache.ts), beside them. */
export const deflatedChunksRoot = (env: NodeJS.ProcessEnv = process.env): string => join(svcCacheDir(env), "deflated");
