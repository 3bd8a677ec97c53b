/**
 * Helpers of the platform tests: a platform in this process (platform/temporary.ts, as
 * svc/testing's, with short timeouts), the fixture artifact packed with `tar`, GraphQL and REST calls, deploys.
 */
import { cp, mkdtemp, readdir, readFile, stat } from "node:fs/promises";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create as tarCreate } from "tar";
import { startTemporaryPlatform, type TemporaryPlatform } from "../../platform/temporary.ts";
import type { PlatformOptions } from "../../platform/options.ts";

export const FIXTURE = new URL("../../fixtures/platform-app/", import.meta.url).pathname;
export const RUNTIME_SDK = new URL("../../runtime/python/svc/", import.meta.url).pathname;

export type TestPlatform = TemporaryPlatform;

export async function tempDir(prefix = "svc-platform-test-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Fast settings for tests: short long polls, heartbeats, sweeps and grace periods. */
export const FAST: Partial<PlatformOptions> = {
  longPollMs: 3000,
  pingIntervalS: 1,
  sweepIntervalMs: 100,
  scaleIntervalMs: 100,
  stopGraceMs: 1500,
  killGraceMs: 500,
  webhookRetryDelayMs: 200,
  streamWaitMs: 200,
  lbReadyWaitMs: 15_000,
};

/** A platform of the test's own (platform/temporary.ts) with the FAST settings; `options` override them. */
export const startTestPlatform = (options: Partial<PlatformOptions> = {}): Promise<TestPlatform> => startTemporaryPlatform({ ...FAST, ...options });

export interface BuiltArtifact {
  path: string;
  sha256: string;
  size: number;
  manifest: Record<string, unknown>;
}

/** Packs fixtures/platform-app plus the Python SDK (as `svc/`) into a .tar.gz. */
export async function buildFixtureArtifact(): Promise<BuiltArtifact> {
  const work = await tempDir("svc-platform-artifact-");
  const tree = join(work, "tree");
  await cp(FIXTURE, tree, { recursive: true, filter: (src) => !src.includes("__pycache__") });
  await cp(RUNTIME_SDK, join(tree, "svc"), { recursive: true, filter: (src) => !src.includes("__pycache__") && !src.endsWith(".pyc") });
  const path = join(work, "artifact.tar.gz");
  await tarCreate({ gzip: { level: 9 }, file: path, cwd: tree, portable: true }, ["svc_manifest.json", "requirements.txt", "handlers", "app", "svc"]);
  const bytes = await readFile(path);
  return {
    path,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    size: (await stat(path)).size,
    manifest: JSON.parse(await readFile(join(FIXTURE, "svc_manifest.json"), "utf8")),
  };
}

export function authHeaders(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}`, "content-type": "application/json" };
}

export async function gql<T = Record<string, any>>(
  p: { url: string; apiKey: string },
  query: string,
  variables?: Record<string, unknown>,
): Promise<{ status: number; data?: T; errors?: Array<{ message: string; extensions?: { code?: string } }> }> {
  const res = await fetch(`${p.url}/graphql`, { method: "POST", headers: authHeaders(p.apiKey), body: JSON.stringify({ query, variables }) });
  const body = (await res.json()) as { data?: T; errors?: Array<{ message: string }> };
  return { status: res.status, ...body };
}

/** GraphQL that must succeed. */
export async function gqlOk<T = Record<string, any>>(p: { url: string; apiKey: string }, query: string, variables?: Record<string, unknown>): Promise<T> {
  const r = await gql<T>(p, query, variables);
  if (r.status !== 200 || r.errors) throw new Error(`GraphQL failed (${r.status}): ${JSON.stringify(r.errors)}`);
  return r.data!;
}

export async function api(p: { url: string; apiKey: string }, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${p.url}${path}`, {
    method,
    headers: authHeaders(p.apiKey),
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed };
}

/** Creates the app and uploads the artifact (prepare → PUT → finalize); returns the build id. */
export async function uploadArtifact(
  p: { url: string; apiKey: string },
  artifact: BuiltArtifact,
  appName = "platform-app",
): Promise<{ appId: string; buildId: string; skipped: boolean }> {
  const existing = await gqlOk<{ app: { id: string } | null }>(p, "query($n: String!) { app(name: $n) { id } }", { n: appName });
  const appId =
    existing.app?.id ?? (await gqlOk<{ createApp: { id: string } }>(p, "mutation($n: String!) { createApp(name: $n) { id } }", { n: appName })).createApp.id;
  const { prepareArtifactUpload: prep } = await gqlOk<{ prepareArtifactUpload: { uploadUrl: string; objectKey: string; alreadyUploaded: boolean } }>(
    p,
    "mutation($a: String!, $s: Int!, $h: String) { prepareArtifactUpload(appId: $a, size: $s, sha256: $h) { uploadUrl objectKey expiresAt alreadyUploaded } }",
    { a: appId, s: artifact.size, h: artifact.sha256 },
  );
  if (!prep.alreadyUploaded) {
    const res = await fetch(prep.uploadUrl, {
      method: "PUT",
      headers: { "content-type": "application/gzip", authorization: `Bearer ${p.apiKey}` },
      body: new Uint8Array(await readFile(artifact.path)),
    });
    if (res.status !== 200) throw new Error(`PUT failed: ${res.status} ${await res.text()}`);
  }
  const { finalizeArtifactUpload: build } = await gqlOk<{ finalizeArtifactUpload: { id: string } }>(
    p,
    "mutation($k: String!, $m: JSON!) { finalizeArtifactUpload(objectKey: $k, manifest: $m) { id } }",
    { k: prep.objectKey, m: artifact.manifest },
  );
  return { appId, buildId: build.id, skipped: prep.alreadyUploaded };
}

export interface EndpointSpec {
  name: string;
  type?: "QB" | "LB";
  workersMin?: number;
  workersMax?: number;
  idleTimeout?: number;
  scalerValue?: number;
  scalerType?: string;
  executionTimeoutMs?: number;
  env?: Array<{ key: string; value: string }>;
  instanceIds?: string[];
}

export async function saveEndpoint(p: { url: string; apiKey: string }, buildId: string, spec: EndpointSpec): Promise<{ id: string; url: string }> {
  const { saveEndpoint: ep } = await gqlOk<{ saveEndpoint: { id: string; url: string } }>(
    p,
    "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id url } }",
    { i: { instanceIds: ["cpu3c-2-4"], template: { imageName: "svc/worker-cpu:py3.11" }, ...spec, buildId } },
  );
  return ep;
}

/** Uploads, creates the endpoints and records their URLs in the build's manifest. */
export async function deploy(
  p: { url: string; apiKey: string },
  artifact: BuiltArtifact,
  specs: EndpointSpec[],
): Promise<{ buildId: string; endpoints: Record<string, { id: string; url: string }> }> {
  const { buildId } = await uploadArtifact(p, artifact);
  const endpoints: Record<string, { id: string; url: string }> = {};
  for (const spec of specs) endpoints[spec.name] = await saveEndpoint(p, buildId, spec);
  const urls = Object.fromEntries(Object.entries(endpoints).map(([name, e]) => [name, e.url]));
  await gqlOk(p, "mutation($b: String!, $u: JSON!) { setBuildEndpointUrls(buildId: $b, urls: $u) { id } }", { b: buildId, u: urls });
  return { buildId, endpoints };
}

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value as T;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Polls /status until the job is final. */
export async function waitFinal(p: { url: string; apiKey: string }, endpointId: string, jobId: string, timeoutMs = 30_000): Promise<any> {
  return waitFor(
    `job ${jobId} to finish`,
    async () => {
      const r = await api(p, "GET", `/v2/${endpointId}/status/${jobId}`);
      return ["COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"].includes(r.body?.status) ? r.body : undefined;
    },
    timeoutMs,
    50,
  );
}

/**
 * Resolves once the runtime's bytecode compile, which a platform's first local worker starts in the
 * background (platform/workers/backends/runtime-bytecode.ts), no longer writes under `dataDir`: a test
 * that reads every file of the state folder reads them after it.
 */
export const runtimeCompileDone = (dataDir: string) =>
  waitFor(
    "the runtime's bytecode compile to finish",
    async () => !(await readdir(join(dataDir, "bytecode")).catch(() => [])).some((name) => name.includes(".tmp-")),
    60_000,
  );
