/**
 * Small apps for the image-environment and import-failure tests: Python sources given as text,
 * laid out as a build artifact (contracts section 1: manifest, handlers, the svc runtime,
 * optional site-packages) and packed like the fixture artifact; endpoints saved with an image.
 */
import { cp, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { create as tarCreate } from "tar";
import { gqlOk, RUNTIME_SDK, tempDir, type BuiltArtifact } from "./_support.ts";

export const CPU_IMAGE = "svc/worker-cpu:py3.11-slim";
export const GPU_IMAGE = "svc/worker-gpu:py3.11-torch";

export interface AppEndpoint {
  name: string;
  module: string;
  /** QB: the function; LB: one GET route per function, at /<function>. */
  functions: string[];
  type?: "QB" | "LB";
}

export async function buildAppArtifact(files: Record<string, string>, endpoints: AppEndpoint[], sitePackages?: string): Promise<BuiltArtifact> {
  const tree = join(await tempDir("svc-app-artifact-"), "tree");
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(tree, path)), { recursive: true });
    await writeFile(join(tree, path), text);
  }
  await cp(RUNTIME_SDK, join(tree, "svc"), { recursive: true, filter: (src) => !src.includes("__pycache__") });
  if (sitePackages) await cp(sitePackages, join(tree, "site-packages"), { recursive: true });
  await mkdir(join(tree, "handlers"));
  const manifest = {
    version: 1,
    app: "image-app",
    pythonVersion: "3.11",
    fingerprint: `sha256:${createHash("sha256").update(JSON.stringify(files)).digest("hex")}`,
    functions: Object.fromEntries(endpoints.flatMap((e) => e.functions.map((f) => [f, e.name]))),
    routes: Object.fromEntries(
      endpoints.filter((e) => e.type === "LB").map((e) => [e.name, e.functions.map((f) => ({ method: "GET", path: `/${f}`, function: f }))]),
    ),
    endpoints: Object.fromEntries(
      endpoints.map((e) => {
        const handler = `handlers/${e.name.replace(/-/g, "_")}.py`;
        const functions = e.functions.map((f) => ({
          name: f,
          module: e.module,
          line: 1,
          isAsync: false,
          isGenerator: false,
          ...(e.type === "LB" ? { httpMethod: "GET", httpPath: `/${f}` } : {}),
        }));
        return [
          e.name,
          {
            name: e.name,
            type: e.type ?? "QB",
            file: `${e.module.replace(/\./g, "/")}.py`,
            module: e.module,
            handler,
            functions,
            hardware: { instanceIds: ["cpu3c-2-4"] },
            image: CPU_IMAGE,
            scaling: { workersMin: 0, workersMax: 1, idleTimeout: 5, scalerType: "QUEUE_DELAY", scalerValue: 4 },
            executionTimeoutMs: 600000,
            env: {},
            dependencies: [],
          },
        ];
      }),
    ),
  };
  await writeFile(join(tree, "svc_manifest.json"), JSON.stringify(manifest, null, 2));
  for (const e of endpoints)
    await writeFile(join(tree, `handlers/${e.name.replace(/-/g, "_")}.py`), `from svc.worker import serve\n\nserve(${JSON.stringify(e.name)})\n`);
  const path = join(tree, "..", "artifact.tar.gz");
  const entries = [
    "svc_manifest.json",
    "handlers",
    "svc",
    ...new Set(Object.keys(files).map((f) => f.split("/")[0]!)),
    ...(sitePackages ? ["site-packages"] : []),
  ];
  await tarCreate({ gzip: { level: 9 }, file: path, cwd: tree, portable: true }, entries);
  const bytes = await readFile(path);
  return { path, sha256: createHash("sha256").update(bytes).digest("hex"), size: (await stat(path)).size, manifest };
}

/** Creates or updates an endpoint running `buildId` on `image`. */
export async function saveImageEndpoint(
  p: { url: string; apiKey: string },
  buildId: string,
  spec: { id?: string; name: string; type?: "QB" | "LB"; image?: string; workersMax?: number },
): Promise<{ id: string; url: string }> {
  const { image = CPU_IMAGE, ...rest } = spec;
  const { saveEndpoint } = await gqlOk<{ saveEndpoint: { id: string; url: string } }>(
    p,
    "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id url } }",
    {
      i: { instanceIds: ["cpu3c-2-4"], template: { imageName: image }, workersMin: 0, workersMax: 1, ...rest, buildId },
    },
  );
  return saveEndpoint;
}
