/**
 * The console's calls to /console/api/ with the key as a bearer. The key lives in sessionStorage
 * (gone with the tab; never in a URL); a 401 or 403 signs out with the server's reason.
 */
const KEY = "svc.console.key";

export class SignedOut extends Error {}

export const storedKey = (): string | null => sessionStorage.getItem(KEY);
export const forgetKey = (): void => sessionStorage.removeItem(KEY);

async function call<T>(key: string, path: string): Promise<T> {
  const response = await fetch(`/console/api/${path}`, { headers: { authorization: `Bearer ${key}` }, cache: "no-store" });
  const body = (await response.json().catch(() => ({}))) as { error?: string };
  if (response.status === 401 || response.status === 403) throw new SignedOut(body.error ?? `refused (${response.status})`);
  if (!response.ok) throw new Error(body.error ?? `${path}: HTTP ${response.status}`);
  return body as T;
}

/** Checks the key with the server before keeping it: a worker's key is refused there. */
export async function signIn(key: string): Promise<void> {
  await call(key, "session");
  sessionStorage.setItem(KEY, key);
}

export function get<T>(path: string): Promise<T> {
  const key = storedKey();
  if (!key) return Promise.reject(new SignedOut("Sign in with the platform's API key."));
  return call<T>(key, path);
}
