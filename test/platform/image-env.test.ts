/**
 * Image environments on the real embedded platform with real Python workers: a worker imports the
 * stdlib, its image's pre-installed set (CPU: nothing; GPU: torch, numpy, … from the interpreter
 * that has them) and its artifact — never the host's packages (pytest, requests). In the bwrap
 * sandbox it cannot read the platform's state folder or other builds; without bwrap
 * (SVC_WORKER_SANDBOX=off) the package view is the same. A requirement comes from a real pip install.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";
import { api, startTestPlatform, tempDir, uploadArtifact, type TestPlatform } from "./_support.ts";
import { buildAppArtifact, GPU_IMAGE, saveImageEndpoint } from "./_app-artifact.ts";

const LOOK = `import importlib
import os

from svc import Endpoint


def _look(imports, paths):
    found = {}
    for name in imports:
        try:
            found[name] = getattr(importlib.import_module(name), "__file__", None) or "built-in"
        except ImportError as exc:
            found[name] = type(exc).__name__
    readable = {}
    for path in paths:
        try:
            with open(path, "rb") as handle:
                handle.read(1)
            readable[path] = "readable"
        except OSError as exc:
            readable[path] = type(exc).__name__
    return {"imports": found, "paths": readable, "exists": {p: os.path.exists(p) for p in paths}}


@Endpoint(name="look")
def look(imports: list = (), paths: list = ()) -> dict:
    return _look(imports, paths)


@Endpoint(name="look-gpu")
def look_gpu(imports: list = (), paths: list = ()) -> dict:
    return _look(imports, paths)


@Endpoint(name="need")
def need(module: str) -> str:
    importlib.import_module(module)  # inside the body, as the spec says: fails the job, not the worker
    return "imported"
`;
const ENDPOINTS = [
  { name: "look", module: "app.look", functions: ["look"] },
  { name: "look-gpu", module: "app.look", functions: ["look_gpu"] },
  { name: "need", module: "app.look", functions: ["need"] },
];
const torchHere = (() => {
  try {
    execFileSync("/usr/bin/python3", ["-c", "import torch"], { stdio: "ignore", timeout: 120_000 });
    return true;
  } catch {
    return false;
  }
})();

let sitePackages: string;
let artifactPath: Awaited<ReturnType<typeof buildAppArtifact>>;

beforeAll(async () => {
  // A requirement the artifact carries: installed for real by pip, like svc:pip-install does.
  sitePackages = join(await tempDir("svc-image-req-"), "site-packages");
  execFileSync("python3", ["-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", "--target", sitePackages, "six==1.17.0"], {
    stdio: "ignore",
    timeout: 120_000,
  });
  artifactPath = await buildAppArtifact({ "app/__init__.py": "", "app/look.py": LOOK }, ENDPOINTS, sitePackages);
}, 150_000);

async function look(p: TestPlatform, endpointId: string, input: { imports?: string[]; paths?: string[] }) {
  const r = await api(p, "POST", `/v2/${endpointId}/runsync`, { input });
  expect(r.body.status, JSON.stringify(r.body)).toBe("COMPLETED");
  return r.body.output as { imports: Record<string, string>; paths: Record<string, string>; exists: Record<string, boolean> };
}

/** The CPU image's view, the same with or without the sandbox. */
async function checkCpuView(p: TestPlatform) {
  const { buildId } = await uploadArtifact(p, artifactPath, "image-app");
  const cpu = await saveImageEndpoint(p, buildId, { name: "look" });
  const out = await look(p, cpu.id, { imports: ["json", "sqlite3", "requests", "pytest", "pip", "numpy", "six"] });
  expect(out.imports).toMatchObject({
    requests: "ModuleNotFoundError",
    pytest: "ModuleNotFoundError",
    pip: "ModuleNotFoundError",
    numpy: "ModuleNotFoundError",
  });
  expect(out.imports.json).toMatch(/json\/__init__\.py$/);
  expect(out.imports.sqlite3).toMatch(/sqlite3\/__init__\.py$/);
  expect(out.imports.six).toMatch(/\/site-packages\/six\.py$/);

  const needEp = await saveImageEndpoint(p, buildId, { name: "need" });
  const failed = await api(p, "POST", `/v2/${needEp.id}/runsync`, { input: { module: "requests" } });
  expect(failed.body.status).toBe("FAILED");
  expect(JSON.parse(failed.body.error)).toMatchObject({ error_type: "ModuleNotFoundError", error_message: "No module named 'requests'" });
  const ok = await api(p, "POST", `/v2/${needEp.id}/runsync`, { input: { module: "six" } });
  expect(ok.body).toMatchObject({ status: "COMPLETED", output: "imported" });
  return buildId;
}

describe("image environments", () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform();
  });
  afterAll(async () => {
    await p?.dispose();
  });

  it("CPU image: the stdlib and the artifact's requirements import; host packages (requests, pytest) and the GPU set do not", async () => {
    await checkCpuView(p);
  }, 60_000);

  it.skipIf(!torchHere)(
    "GPU image: torch and numpy import from the image's interpreter; pytest and requests do not",
    async () => {
      const { buildId } = await uploadArtifact(p, artifactPath, "image-app");
      const gpu = await saveImageEndpoint(p, buildId, { name: "look-gpu", image: GPU_IMAGE });
      const out = await look(p, gpu.id, { imports: ["torch", "numpy", "pytest", "requests", "pip", "six"] });
      expect(out.imports.torch).toMatch(/torch\/__init__\.py$/);
      expect(out.imports.numpy).toMatch(/numpy\/__init__\.py$/);
      expect(out.imports).toMatchObject({ pytest: "ModuleNotFoundError", requests: "ModuleNotFoundError", pip: "ModuleNotFoundError" });
      expect(out.imports.six).toMatch(/site-packages\/six\.py$/); // the artifact's copy comes first
    },
    90_000,
  );

  it.runIf(process.platform === "linux")(
    "in the bwrap sandbox, a worker cannot read the platform's state folder, its database, its key or other builds",
    async () => {
      if (!(await bwrapUsable())) return expect.fail("bwrap is not usable here: scripts/setup.sh installs bubblewrap");
      const { buildId } = await uploadArtifact(p, artifactPath, "image-app");
      const other = await buildAppArtifact({ "app/__init__.py": "", "app/look.py": `${LOOK}\n# another build\n` }, ENDPOINTS);
      const { buildId: otherBuild } = await uploadArtifact(p, other, "image-app");
      const dataDir = p.context.options.dataDir;
      const ep = await saveImageEndpoint(p, buildId, { name: "look" });
      const paths = [
        join(dataDir, "api-key"),
        join(dataDir, "platform.db"),
        join(dataDir, "builds", otherBuild, "svc_manifest.json"),
        `/proc/${process.pid}/root${dataDir}/api-key`,
        "/etc/hostname",
        "svc_manifest.json",
      ];
      const out = await look(p, ep.id, { paths });
      for (const path of paths.slice(0, 4)) {
        expect(out.paths[path], path).toBe("FileNotFoundError");
        expect(out.exists[path], path).toBe(false);
      }
      expect(out.paths["svc_manifest.json"]).toBe("readable"); // its own build is there
    },
    60_000,
  );
});

describe("image environments without the sandbox (SVC_WORKER_SANDBOX=off)", () => {
  let p: TestPlatform;
  beforeAll(async () => {
    process.env.SVC_WORKER_SANDBOX = "off";
    try {
      // as root, workers run as their app's pool user: an interpreter under /root (pyenv) is out of its reach
      p = await startTestPlatform(process.getuid?.() === 0 ? { pythonForImage: () => "/usr/bin/python3" } : {});
    } finally {
      delete process.env.SVC_WORKER_SANDBOX;
    }
  });
  afterAll(async () => {
    await p?.dispose();
  });

  it("gives the same package view by interpreter flags, and warns once that files are not isolated", async () => {
    await checkCpuView(p);
    const warnings = p.logs.filter((line) => line.includes("files are not isolated"));
    expect(warnings).toHaveLength(1);
  }, 60_000);

  it.runIf(process.getuid?.() === 0)(
    "as root, runs workers as their app's unprivileged user: the platform's key and database exist but cannot be read",
    async () => {
      const { buildId } = await uploadArtifact(p, artifactPath, "image-app");
      const ep = await saveImageEndpoint(p, buildId, { name: "look" });
      const dataDir = p.context.options.dataDir;
      const paths = [join(dataDir, "api-key"), join(dataDir, "platform.db"), "svc_manifest.json"];
      const out = await look(p, ep.id, { paths });
      expect(out.paths[paths[0]!]).toBe("PermissionError");
      expect(out.paths[paths[1]!]).toBe("PermissionError");
      expect(out.paths["svc_manifest.json"]).toBe("readable");
      expect(p.logs.some((line) => line.includes("each app's workers run as an unprivileged host user of their own"))).toBe(true);
    },
    60_000,
  );
});

describe("--isolation strict without the sandbox", () => {
  let p: TestPlatform;
  beforeAll(async () => {
    process.env.SVC_WORKER_SANDBOX = "off";
    try {
      p = await startTestPlatform({ isolation: "strict" });
    } finally {
      delete process.env.SVC_WORKER_SANDBOX;
    }
  });
  afterAll(async () => {
    await p?.dispose();
  });

  it("starts no worker: the job fails with SANDBOX_REQUIRED's message and remedy", async () => {
    const { buildId } = await uploadArtifact(p, artifactPath, "image-app");
    const ep = await saveImageEndpoint(p, buildId, { name: "look" });
    const r = await api(p, "POST", `/v2/${ep.id}/runsync`, { input: {} });
    expect(r.body.status).toBe("FAILED");
    expect(JSON.parse(r.body.error)).toMatchObject({
      error_type: "WorkerStartError",
      error_message: expect.stringContaining("Refusing to start a worker without the sandbox"),
    });
    expect(r.body.error).toContain("bubblewrap");
    expect(p.logs.some((line) => line.includes("files are not isolated"))).toBe(false); // refused, not warned
  }, 60_000);
});
