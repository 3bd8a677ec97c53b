/** The running platform's status views for `svc platform status` (/platform/gpus, /platform/limits, /platform/cluster). */
import { httpRequest } from "../../core/client/http.ts";

/** GET `path` of the platform at `url`: its JSON, or undefined when it does not answer one (an older platform, a wrong key, none running). */
export async function fetchPlatformView<T>(url: string, apiKey: string, path: string): Promise<T | undefined> {
  try {
    const res = await httpRequest(url, `${url}${path}`, { method: "GET", headers: { authorization: `Bearer ${apiKey}` }, headersTimeout: 20_000 });
    return res.status === 200 && res.json !== undefined ? (res.json as T) : undefined;
  } catch {
    return undefined;
  }
}
