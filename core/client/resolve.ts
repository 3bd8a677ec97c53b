/**
 * Which platform svc talks to, and with which key (docs/deploy.md, "Platform and API key"):
 * `PLATFORM_API_URL` (http:// or https://) with `PLATFORM_API_KEY`, or — with no URL — the embedded
 * platform, started by the `startEmbedded` its caller hands in (the CLI passes platform/'s
 * ensureLocalPlatform: core/ imports nothing from platform/). A key the user set is used as given
 * against either, so a wrong one fails at the first call as it would on the hosted platform; the
 * embedded platform's own key is used only when the user set none.
 */
import { errors } from "../errors.ts";

export interface EmbeddedPlatform {
  url: string;
  apiKey: string;
}

/** Finds or starts the embedded platform on this machine. */
export type StartEmbedded = () => Promise<EmbeddedPlatform>;

export interface ResolvedPlatform {
  url: string;
  apiKey: string;
  /** True for the embedded platform on loopback. */
  embedded: boolean;
  /** "user": PLATFORM_API_KEY (.env or shell); "embedded": the embedded platform's own key. */
  keySource: "user" | "embedded";
}

export interface ResolveOptions {
  startEmbedded?: StartEmbedded;
}

export const trimUrl = (url: string): string => url.trim().replace(/\/+$/, "");

/** `PLATFORM_API_URL` as svc will call it: http(s) with a host, no trailing slash; PLATFORM_URL_INVALID otherwise. */
function checkPlatformUrl(raw: string): string {
  const url = trimUrl(raw);
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.hostname) throw errors.PLATFORM_URL_INVALID(raw.trim());
  return url;
}

export async function resolvePlatform(env: NodeJS.ProcessEnv = process.env, options: ResolveOptions = {}): Promise<ResolvedPlatform> {
  const url = env.PLATFORM_API_URL?.trim();
  const userKey = env.PLATFORM_API_KEY?.trim();
  if (url) {
    const checked = checkPlatformUrl(url);
    if (!userKey) throw errors.AUTH_MISSING();
    return { url: checked, apiKey: userKey, embedded: false, keySource: "user" };
  }
  if (!options.startEmbedded) throw errors.PLATFORM_NOT_CONFIGURED();
  const local = await options.startEmbedded();
  return { url: trimUrl(local.url), apiKey: userKey || local.apiKey, embedded: true, keySource: userKey ? "user" : "embedded" };
}
