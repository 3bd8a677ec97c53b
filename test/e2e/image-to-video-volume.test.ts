/**
 * The image-to-video example reading its weights from a network volume, end to end: a tiny model's
 * checkpoint in the published layout (examples/image-to-video/tests/tiny_checkpoint.py: sharded
 * safetensors with their index, the T5 and VAE .pth files, the tokenizer) is uploaded with
 * `svc volume upload` over the S3 API, the example is deployed with WAN_CHECKPOINT_DIR on
 * /platform-volume, and runsync's video is the one the same tiny model makes in memory (deployed
 * again with no checkpoint folder). "The same" allows what the in-memory model varies by from run
 * to run on a busy CPU (examples/image-to-video/tests/test_tiny_checkpoint.py says how much).
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

/** The video's frames as RGB bytes (ffmpeg decodes; the worker encoded with its own PyAV). */
const rgbFrames = (file: string) =>
  execFileSync("ffmpeg", ["-loglevel", "error", "-i", file, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], { maxBuffer: 64 * 1024 * 1024 });

describe("image-to-video with its weights on a network volume", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let work: string;
  let root: string;
  let imageDataUrl: string;

  async function deployAndRun(env: Record<string, string>): Promise<{ output: Record<string, any>; file: string }> {
    Object.assign(process.env, env);
    let endpointId: string;
    try {
      const { ctx } = await runDeploy({ root, client, logger: createLogger("silent") });
      endpointId = ctx.deployed.find((e) => e.name === "image-to-video")!.id;
    } finally {
      for (const key of Object.keys(env)) delete process.env[key];
    }
    const job = await client.runsync(endpointId, {
      prompt: "a test card slowly zooms in",
      image: imageDataUrl,
      size: "1280*720",
      duration: 5,
      seed: 1234,
      num_inference_steps: 2,
      negative_prompt: "",
      guidance: 5,
      flow_shift: 5,
      enable_prompt_optimization: false,
      enable_safety_checker: false,
    });
    expect(job.status, JSON.stringify(job.error)).toBe("COMPLETED");
    const output = job.output as Record<string, any>;
    const response = await fetch(output.video_url, { headers: { Authorization: `Bearer ${platform.apiKey}` } });
    const file = join(work, `${Object.values(env).join("-").replace(/\W/g, "_")}.mp4`);
    await writeFile(file, Buffer.from(await response.arrayBuffer()));
    return { output, file };
  }

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "svc-i2v-volume-"));
    await cp(EXAMPLE, join(work, "image-to-video"), { recursive: true, filter: (src) => !/(\.svc|__pycache__|outputs)(\/|$)/.test(src) });
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

  it("uploads a tiny checkpoint over S3, deploys the example reading it, and gets the in-memory model's video", async () => {
    const checkpoint = join(work, "tiny-ckpt");
    execFileSync("/usr/bin/python3", [join(root, "tests", "tiny_checkpoint.py"), checkpoint, "tiny"]);
    const env = { ...process.env, NO_COLOR: "1", CI: "1", PLATFORM_API_URL: platform.url, PLATFORM_API_KEY: platform.apiKey };
    const svc = (args: string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [BIN, ...args, "--root", root], { env, timeout: 120_000 }, (e, so, se) =>
          e ? reject(new Error(`${se}${so}`)) : resolve(so),
        ),
      );
    await svc(["volume", "create", "wan-weights", "--size", "1"]);
    const uploaded = JSON.parse(await svc(["volume", "upload", checkpoint, "wan-weights:tiny", "--json"]));
    expect(uploaded.uploaded.map((u: { key: string }) => u.key)).toEqual([
      "tiny/Wan2.1_VAE.pth",
      "tiny/google/umt5-xxl/tokenizer.json",
      "tiny/high_noise_model/diffusion_pytorch_model-00001-of-00002.safetensors",
      "tiny/high_noise_model/diffusion_pytorch_model-00002-of-00002.safetensors",
      "tiny/high_noise_model/diffusion_pytorch_model.safetensors.index.json",
      "tiny/low_noise_model/diffusion_pytorch_model-00001-of-00002.safetensors",
      "tiny/low_noise_model/diffusion_pytorch_model-00002-of-00002.safetensors",
      "tiny/low_noise_model/diffusion_pytorch_model.safetensors.index.json",
      "tiny/models_t5_umt5-xxl-enc-bf16.pth",
    ]);

    const fromVolume = await deployAndRun({ WAN_CONFIG: "tiny", WAN_CHECKPOINT_DIR: "/platform-volume/tiny" });
    expect(fromVolume.output.warnings.join(" ")).toMatch(/weights from \/platform-volume\/tiny|weights from \/.*\/volumes\/vol_\w+\/tiny/);
    const inMemory = await deployAndRun({ WAN_CONFIG: "tiny", WAN_CHECKPOINT_DIR: "" });
    expect(inMemory.output.warnings.join(" ")).toContain("random weights");

    expect([fromVolume.output.width, fromVolume.output.height, fromVolume.output.frames]).toEqual([
      inMemory.output.width,
      inMemory.output.height,
      inMemory.output.frames,
    ]);
    const a = rgbFrames(fromVolume.file);
    const b = rgbFrames(inMemory.file);
    expect(a.length).toBe(b.length);
    let differing = 0;
    let total = 0;
    for (let i = 0; i < a.length; i++) {
      const d = Math.abs(a[i]! - b[i]!);
      total += d;
      if (d > 0) differing++;
    }
    console.log(`volume vs in-memory video: ${((differing / a.length) * 100).toFixed(2)} % of pixels differ, mean |diff| ${(total / a.length).toFixed(3)}`);
    expect(differing / a.length).toBeLessThan(0.2);
    expect(total / a.length).toBeLessThan(2);
  }, 480_000);
});
