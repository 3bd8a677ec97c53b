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

type EnsureLocalPlatform = () => Promise<{ url: string; apiKey: string }>;

// Loaded lazily: importing platform/ pulls in SQLite and the server, which remote deploys never need.
const PLATFORM_MODULES = ["../../platform/index.ts", "../../platform/server.ts"];

async function loadEnsureLocalPlatform(): Promise<EnsureLocalPlatform> {
  let lastError: unknown;
  for (const specifier of PLATFORM_MODULES) {
    try {
      const mod = (await import(specifier)) as { ensureLocalPlatform?: EnsureLocalPlatform };
      if (typeof mod.ensureLocalPlatform === "function") return mod.ensureLocalPlatform;
    } catch (error) {
      lastError = error;
    }
  }
  throw errors.PLATFORM_UNREACHABLE("the embedded platform", lastError ?? new Error("platform/ exports no ensureLocalPlatform()"));
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
