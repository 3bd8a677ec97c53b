/**
 * Which platform the CLI talks to: `PLATFORM_API_URL` + `PLATFORM_API_KEY` (the CLI loads `.env`
 * first), or — with no `PLATFORM_API_URL` — the embedded platform on this machine, started on
 * demand by `ensureLocalPlatform()` of platform/.
 */
import { errors } from "../errors.ts";

export interface ResolvedPlatform {
  url: string;
  apiKey: string;
  /** True for the embedded platform on loopback. */
  embedded: boolean;
}

/** Loaded lazily: remote deploys never need platform/ (SQLite, the server) in the process. */
async function loadEnsureLocalPlatform() {
  return (await import("../../platform/ensure.ts")).ensureLocalPlatform;
}

export const trimUrl = (url: string): string => url.trim().replace(/\/+$/, "");

export async function resolvePlatform(env: NodeJS.ProcessEnv = process.env): Promise<ResolvedPlatform> {
  const url = env.PLATFORM_API_URL?.trim();
  const apiKey = env.PLATFORM_API_KEY?.trim();
  if (url) {
    if (!apiKey) throw errors.AUTH_MISSING();
    return { url: trimUrl(url), apiKey, embedded: false };
  }
  const ensureLocalPlatform = await loadEnsureLocalPlatform();
  const local = await ensureLocalPlatform();
  return { url: trimUrl(local.url), apiKey: local.apiKey, embedded: true };
}
