/**
 * Part (A) of the spec end to end: the image-to-video example is built and deployed with the real
 * pipeline to a real embedded platform, its worker (Debian's python3 with CPU torch, the interpreter
 * the platform maps the GPU image to here) runs a tiny model, and runsync answers a downloadable
 * H.264 mp4 that ffprobe measures. One model per deployment: the same app is deployed three times,
 * with the tiny Wan 2.1 I2V, Wan 2.2 I2V-A14B and Wan 2.2 TI2V-5B configs (WAN_CONFIG forwarded by
 * the example's own svc.config.ts plugin); there is no GPU in CI. The worker decodes and encodes
 * with the artifact's PyAV, not with a host ffmpeg (ffprobe here only measures the result).
 */
import { execFileSync } from "node:child_process";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { startPlatform, type RunningPlatform } from "../../platform/index.ts";

const EXAMPLE = new URL("../../examples/image-to-video/", import.meta.url).pathname;

function probe(file: string) {
  const out = execFileSync(
    "ffprobe",
    [
      "-v",
      "error",
      "-select_streams",
      "v:0",
      "-count_frames",
      "-show_entries",
      "stream=codec_name,width,height,r_frame_rate,nb_read_frames",
      "-of",
      "json",
      file,
    ],
    { encoding: "utf8" },
  );
  return JSON.parse(out).streams[0] as { codec_name: string; width: number; height: number; r_frame_rate: string; nb_read_frames: string };
}

interface ModelCase {
  config: string;
  fps: number;
  /** 1280*720 is an area; tiny configs shrink it, keeping the 16:9 image's aspect. */
  width: number;
  height: number;
}

// tiny configs cap a video at 9 frames; 5B: 24 fps and its own size rule (multiples of 32)
const MODELS: ModelCase[] = [
  { config: "tiny-2.1", fps: 16, width: 80, height: 48 },
  { config: "tiny", fps: 16, width: 80, height: 48 },
  { config: "tiny-5b", fps: 24, width: 128, height: 64 },
];

describe("image-to-video on the embedded platform", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let root: string;
  let imageDataUrl: string;
  const endpoints = new Map<string, string>();

  async function deploy(config: string): Promise<string> {
    process.env.WAN_CONFIG = config;
    try {
      const { ctx } = await runDeploy({ root, client, logger: createLogger("silent") });
      return ctx.deployed.find((e) => e.name === "image-to-video")!.id;
    } finally {
      delete process.env.WAN_CONFIG;
    }
  }

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "svc-i2v-"));
    await cp(EXAMPLE, join(root, "image-to-video"), { recursive: true, filter: (src) => !/(\.svc|__pycache__|outputs)(\/|$)/.test(src) });
    root = join(root, "image-to-video");
    platform = await startPlatform({ dataDir: join(root, "..", "platform"), port: 0, log: () => {} });
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });
    await client.createVolume({ name: "wan-weights", size: 1 }); // the example declares it; the tiny models need nothing on it

    const png = join(root, "..", "input.png");
    execFileSync("ffmpeg", ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=1", "-frames:v", "1", png]);
    imageDataUrl = `data:image/png;base64,${execFileSync("base64", ["-w0", png], { encoding: "utf8" })}`;
  }, 60_000);

  afterAll(async () => {
    await platform?.close();
    await rm(join(root, ".."), { recursive: true, force: true });
  });

  for (const model of MODELS) {
    it(`${model.config}: deploys, answers runsync with a ${model.fps} fps H.264 mp4 whose size and frame count ffprobe confirms`, async () => {
      const endpointId = await deploy(model.config);
      endpoints.set(model.config, endpointId);
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
      expect(job.status).toBe("COMPLETED");
      const output = job.output as Record<string, any>;
      expect(output).toMatchObject({ seed: 1234, fps: model.fps, frames: 9, model: model.config, width: model.width, height: model.height });
      // a worker's first job also reports the model's load time ("load")
      expect(
        Object.keys(output.timings)
          .filter((k) => k !== "load")
          .sort(),
      ).toEqual(["decode", "denoise", "encode_video", "image_encode", "text_encode"]);
      expect(output.warnings.join(" ")).toContain("tiny");

      const response = await fetch(output.video_url, { headers: { Authorization: `Bearer ${platform.apiKey}` } });
      expect(response.status).toBe(200);
      const file = join(root, "..", `${model.config}.mp4`);
      await writeFile(file, Buffer.from(await response.arrayBuffer()));
      expect(probe(file)).toEqual({ codec_name: "h264", width: model.width, height: model.height, r_frame_rate: `${model.fps}/1`, nb_read_frames: "9" });

      // The video is the API key holder's only.
      expect((await fetch(output.video_url)).status).toBe(401);
    }, 240_000);
  }

  it("reports a random seed back when seed is -1", async () => {
    const endpointId = endpoints.get("tiny-5b")!;
    const job = await client.runsync(endpointId, { prompt: "p", image: imageDataUrl, seed: -1, num_inference_steps: 1 });
    expect(job.status).toBe("COMPLETED");
    const seed = (job.output as { seed: number }).seed;
    expect(Number.isSafeInteger(seed) || seed > 2 ** 53).toBe(true);
    expect(seed).toBeGreaterThanOrEqual(0);
  });

  it("answers HTTP 400 with a FAILED job naming the field for a bad input", async () => {
    const endpointId = endpoints.get("tiny-5b")!;
    const response = await fetch(`${platform.url}/v2/${endpointId}/runsync`, {
      method: "POST",
      headers: { Authorization: `Bearer ${platform.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ input: { prompt: "p", image: imageDataUrl, num_inference_steps: 51 } }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { status: string; error: string };
    expect(body.status).toBe("FAILED");
    expect(body.error).toMatch(/^num_inference_steps/);
  });
});
