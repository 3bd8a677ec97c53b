/**
 * The image-to-video example's distilled mode as a deployer sets it up (issue 30): the tiny model's
 * checkpoint and a tiny LoRA adapter per expert in the published Lightning layout
 * (`high_noise_model.safetensors`, `low_noise_model.safetensors`; examples/image-to-video/tests/
 * tiny_checkpoint.py writes both) are uploaded to the network volume, the example is deployed with
 * WAN_LORA naming the adapters' folder on /platform-volume, and a runsync job that leaves
 * num_inference_steps and guidance out runs the distilled schedule: 4 unguided transformer forwards.
 * A second job asks for the step cache, which the distilled mode declines and says so.
 */
import { execFile, execFileSync } from "node:child_process";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";

const EXAMPLE = new URL("../../examples/image-to-video/", import.meta.url).pathname;
const BIN = new URL("../../bin/svc.mjs", import.meta.url).pathname;
const DEPLOY_ENV = { WAN_CONFIG: "tiny", WAN_CHECKPOINT_DIR: "/platform-volume/tiny", WAN_LORA: "/platform-volume/lightning" };

describe("image-to-video in distilled mode, adapters on a network volume", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let work: string;
  let root: string;
  let imageDataUrl: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "svc-i2v-distilled-"));
    await cp(EXAMPLE, join(work, "image-to-video"), { recursive: true, filter: (src) => !/(\.svc|__pycache__|outputs|fixtures)(\/|$)/.test(src) });
    root = join(work, "image-to-video");
    platform = await startPlatform({ dataDir: join(work, "platform"), port: 0, log: () => {} });
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    const png = join(work, "input.png");
    execFileSync("ffmpeg", ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=1", "-frames:v", "1", png]);
    imageDataUrl = `data:image/png;base64,${execFileSync("base64", ["-w0", png], { encoding: "utf8" })}`;
  }, 60_000);

  afterAll(async () => {
    await platform?.close();
    await rm(work, { recursive: true, force: true });
  });

  it("deploys with WAN_LORA on the volume and runs a distilled job through runsync", async () => {
    const upload = join(work, "upload");
    const script = join(root, "tests", "tiny_checkpoint.py");
    execFileSync("/usr/bin/python3", [script, join(upload, "tiny"), "tiny"]);
    execFileSync("/usr/bin/python3", [script, "--adapters", join(upload, "lightning"), "tiny"]);
    const env = { ...process.env, NO_COLOR: "1", CI: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
    const svc = (args: string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [BIN, ...args, "--root", root], { env, timeout: 120_000 }, (e, so, se) =>
          e ? reject(new Error(`${se}${so}`)) : resolve(so),
        ),
      );
    await svc(["volume", "create", "wan-weights", "--size", "1"]);
    await svc(["volume", "upload", join(upload, "tiny"), "wan-weights:tiny", "--json"]);
    const adapters = JSON.parse(await svc(["volume", "upload", join(upload, "lightning"), "wan-weights:lightning", "--json"]));
    expect(adapters.uploaded.map((u: { key: string }) => u.key)).toEqual(["lightning/high_noise_model.safetensors", "lightning/low_noise_model.safetensors"]);

    Object.assign(process.env, DEPLOY_ENV);
    let endpointId: string;
    try {
      const { ctx } = await runDeploy({ root, client, logger: createLogger("silent") });
      endpointId = ctx.deployed.find((e) => e.name === "image-to-video")!.id;
    } finally {
      for (const key of Object.keys(DEPLOY_ENV)) delete process.env[key];
    }
    const input = { prompt: "a test card slowly zooms in", image: imageDataUrl, seed: 1234, enable_safety_checker: false };
    const job = await client.runsync(endpointId, input);
    expect(job.status, JSON.stringify(job.error)).toBe("COMPLETED");
    const out = job.output as Record<string, any>;
    expect([out.mode, out.solver, out.steps, out.transformer_forwards, out.steps_computed]).toEqual(["distilled", "distilled-euler", 4, 4, 4]);
    expect(out.warnings.join(" ")).toMatch(/weights from \/platform-volume\/tiny|weights from \/.*\/volumes\/vol_\w+\/tiny/);
    const video = await fetch(out.video_url, { headers: { Authorization: `Bearer ${platform.apiKey}` } });
    const file = join(work, "distilled.mp4");
    await writeFile(file, Buffer.from(await video.arrayBuffer()));
    const frames = execFileSync(
      "ffprobe",
      ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file],
      { encoding: "utf8" },
    );
    expect(Number(frames.trim())).toBe(out.frames);

    const cached = await client.runsync(endpointId, { ...input, guidance: 3.5, enable_step_cache: true });
    expect(cached.status, JSON.stringify(cached.error)).toBe("COMPLETED");
    const second = cached.output as Record<string, any>;
    expect([second.mode, second.transformer_forwards]).toEqual(["distilled", 8]);
    expect(second.warnings.join(" ")).toContain("enable_step_cache: the distilled mode");
  }, 480_000);
});
