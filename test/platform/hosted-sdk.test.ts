/**
 * The hosted platform's public Python SDK (PyPI `runpod` 1.12), installed from PyPI by svc's own
 * dependency installer (as an app's build does), run by python3 against a real embedded platform on
 * loopback: its GraphQL calls for GPU types, templates, endpoints and the user (get_gpus, get_gpu,
 * create_template, create_endpoint, update_endpoint_template, get_endpoints, get_user) and its REST
 * endpoint client (Endpoint.run_sync) on a deployed fixture endpoint. Skipped, saying so, only when
 * PyPI cannot be reached.
 *
 * The install is the stock-worker fixture's with the same pin as test/e2e/stock-worker.test.ts: the
 * dependency cache every app shares holds it once, so one of the two files installs it (a venv and
 * pip of its own took 47 s of this file's 50 s on CI).
 */
import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../core/logger.ts";
import { runBuild } from "../../testing/index.ts";
import { copyFixture, pypiReachable } from "../plugins/_helpers.ts";
import { api, buildFixtureArtifact, deploy, startTestPlatform, tempDir, type TestPlatform } from "./_support.ts";

const SDK = "runpod==1.12.0";
const online = await pypiReachable();
if (!online) console.warn(`the hosted SDK test is skipped: https://pypi.org did not answer, so ${SDK} cannot be installed`);

const run = (file: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeout: number }) =>
  new Promise<{ code: number; output: string }>((resolve) => {
    execFile(file, args, { ...options, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });

/** What the SDK script does, in the SDK's own calls; it prints one JSON object. */
const SCRIPT = String.raw`
import json, os, sys, time
import runpod

runpod.api_key = os.environ["SVC_TEST_KEY"]
out = {}
out["gpus"] = runpod.get_gpus()
out["gpu"] = runpod.get_gpu("ADA_24", 2)
try:
    runpod.get_gpu("NVIDIA H100 80GB HBM3")
except ValueError as error:
    out["unknown_gpu"] = str(error)
template = runpod.create_template(name="sdk-cpu", image_name="svc/worker-cpu:py3.11", docker_start_cmd='python -c "print(1)"',
                                  env={"FROM_TEMPLATE": "1"}, is_serverless=True, volume_in_gb=20, ports="8000/http")
out["template"] = template
endpoint = runpod.create_endpoint(name="sdk-endpoint", template_id=template["id"], gpu_ids="ADA_24,AMPERE_16", workers_max=2,
                                  idle_timeout=7, flashboot=True, allowed_cuda_versions="12.4", gpu_count=2)
out["endpoint"] = endpoint
other = runpod.create_template(name="sdk-gpu", image_name="svc/worker-gpu:py3.11-torch", is_serverless=True)
out["other_template"] = other
out["updated"] = runpod.update_endpoint_template(endpoint["id"], other["id"])
image_job = runpod.Endpoint(endpoint["id"]).run({"x": 1})  # an image and no svc build: fails at once
for _ in range(400):
    image_status = image_job.status()
    if image_status != "IN_QUEUE":
        break
    time.sleep(0.05)
out["image_job"] = {"id": image_job.job_id, "status": image_status}
out["endpoints"] = runpod.get_endpoints()
out["user"] = runpod.get_user()
out["job"] = runpod.Endpoint(os.environ["SVC_TEST_ENDPOINT"]).run_sync({"op": "echo", "value": [1, "two"]}, timeout=60)
runpod.api_key = "not-the-key"
try:
    runpod.get_endpoints()
except runpod.error.AuthenticationError as error:
    out["wrong_key"] = str(error)
print("RESULT " + json.dumps(out))
`;

describe.runIf(online)("the hosted platform's Python SDK (PyPI runpod 1.12) against the embedded platform", { timeout: 300_000 }, () => {
  let dir: string;
  let app: string;
  let sitePackages: string;
  let platform: TestPlatform;
  let workEndpoint: string;

  beforeAll(async () => {
    dir = await tempDir("svc-hosted-sdk-");
    app = copyFixture("stock-worker");
    await writeFile(join(app, "requirements.txt"), `${SDK}\n`);
    sitePackages = (await runBuild({ root: app, logger: createLogger("silent") })).depsDir!;
    platform = await startTestPlatform();
    const deployed = await deploy(platform, await buildFixtureArtifact(), [{ name: "work", workersMax: 1 }]);
    workEndpoint = deployed.endpoints.work!.id;
  }, 300_000);
  afterAll(async () => {
    await platform?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (app) await rm(dirname(app), { recursive: true, force: true });
  });

  it("accepts every GPU-type, template, endpoint and user call it sends, with the hosted field names", async () => {
    const script = join(dir, "sdk_calls.py");
    await writeFile(script, SCRIPT);
    const env = {
      ...process.env,
      RUNPOD_API_BASE_URL: platform.url,
      RUNPOD_ENDPOINT_BASE_URL: `${platform.url}/v2`,
      SVC_TEST_KEY: platform.apiKey,
      SVC_TEST_ENDPOINT: workEndpoint,
      HOME: dir,
      PYTHONPATH: sitePackages,
    };
    const result = await run("python3", [script], { env, timeout: 120_000 });
    const line = result.output.split("\n").find((l) => l.startsWith("RESULT "));
    expect(line, result.output).toBeDefined();
    const out = JSON.parse(line!.slice("RESULT ".length));

    // GPU types: this platform's GPU groups, neutral prices.
    expect(out.gpus.map((g: { id: string }) => g.id)).toEqual(["AMPERE_16", "AMPERE_24", "ADA_24", "AMPERE_48", "ADA_48_PRO", "AMPERE_80", "ADA_80_PRO"]);
    expect(out.gpus[2]).toMatchObject({ id: "ADA_24", memoryInGb: 24 });
    expect(out.gpu).toMatchObject({
      id: "ADA_24",
      memoryInGb: 24,
      maxGpuCount: 8,
      securePrice: 0,
      lowestPrice: { minimumBidPrice: 0, uninterruptablePrice: 0 },
    });
    expect(out.unknown_gpu).toContain("No GPU found");

    // Templates: kept fields echo, hosted-only fields answer their neutral values.
    expect(out.template).toMatchObject({
      name: "sdk-cpu",
      imageName: "svc/worker-cpu:py3.11",
      dockerArgs: 'python -c "print(1)"',
      containerDiskInGb: 10,
      isServerless: true,
      env: [{ key: "FROM_TEMPLATE", value: "1" }],
      volumeInGb: 0,
      ports: null,
    });

    // Endpoints: created from the template with the hosted input (FLASHBOOT as an enum literal), then moved to another template.
    expect(out.endpoint).toMatchObject({
      name: "sdk-endpoint",
      templateId: out.template.id,
      gpuIds: "ADA_24,AMPERE_16",
      gpuCount: 2,
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 7,
      scalerType: "QUEUE_DELAY",
      scalerValue: 4,
      networkVolumeId: "",
      locations: "",
      flashBootType: "FLASHBOOT",
      allowedCudaVersions: null,
    });
    expect(out.updated).toEqual({ id: out.endpoint.id, templateId: out.other_template.id });
    const listed = out.endpoints.find((e: { id: string }) => e.id === out.endpoint.id);
    expect(listed).toMatchObject({
      templateId: out.other_template.id,
      aiKey: null,
      userId: out.user.id,
      version: 0,
      workersStandby: 0,
      networkVolume: null,
      env: [],
    });
    expect(Number.isNaN(Date.parse(listed.createdAt))).toBe(false);
    expect(out.endpoints.map((e: { id: string }) => e.id)).toContain(workEndpoint);
    expect(out.user).toMatchObject({ id: "local", networkVolumes: [] });

    // A job on the endpoint made from an image (no svc build) fails at once, naming the image.
    expect(out.image_job.status).toBe("FAILED");
    const imageJob = (await api(platform, "GET", `/v2/${out.endpoint.id}/status/${out.image_job.id}`)).body;
    expect(JSON.parse(imageJob.error)).toMatchObject({
      error_type: "IMAGE_NOT_RUNNABLE",
      error_message: expect.stringContaining('"svc/worker-gpu:py3.11-torch"'),
    });

    // Its REST client runs a job on a deployed endpoint; a wrong key is its AuthenticationError.
    expect(out.job).toEqual({ echo: [1, "two"] });
    expect(out.wrong_key).toContain("Unauthorized");
  });
});
