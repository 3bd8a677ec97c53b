/**
 * Part (A) of the spec end to end: the image-to-video example is built and deployed with the real
 * pipeline to a real embedded platform, its worker (Debian's python3 with CPU torch, the interpreter
 * the platform maps the GPU image to here) runs the tiny model, and runsync answers a downloadable
 * mp4 that ffprobe measures. The tiny config is chosen explicitly (WAN_CONFIG=tiny forwarded by the
 * example's own svc.config.ts plugin); there is no GPU in CI.
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
  const out = execFileSync("ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries", "stream=codec_name,width,height,r_frame_rate,nb_read_frames", "-of", "json", file], { encoding: "utf8" });
  return JSON.parse(out).streams[0] as { codec_name: string; width: number; height: number; r_frame_rate: string; nb_read_frames: string };
}

describe("image-to-video on the embedded platform", () => {
  let platform: RunningPlatform;
  let client: PlatformClient;
  let root: string;
  let endpointId: string;
  let imageDataUrl: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "svc-i2v-"));
    await cp(EXAMPLE, join(root, "image-to-video"), { recursive: true, filter: (src) => !/(\.svc|__pycache__|outputs)(\/|$)/.test(src) });
    root = join(root, "image-to-video");
    platform = await startPlatform({ dataDir: join(root, "..", "platform"), port: 0, log: () => {} });
    client = createPlatformClient({ url: platform.url, apiKey: platform.apiKey });

    const png = join(root, "..", "input.png");
    execFileSync("ffmpeg", ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=1", "-frames:v", "1", png]);
    imageDataUrl = `data:image/png;base64,${execFileSync("base64", ["-w0", png], { encoding: "utf8" })}`;

    process.env.WAN_CONFIG = "tiny";
    try {
      const { ctx } = await runDeploy({ root, client, logger: createLogger("silent") });
      endpointId = ctx.deployed.find((e) => e.name === "image-to-video")!.id;
    } finally {
      delete process.env.WAN_CONFIG;
    }
  }, 180_000);

  afterAll(async () => {
    await platform?.close();
    await rm(join(root, ".."), { recursive: true, force: true });
  });

  it("answers runsync with a downloadable 16 fps H.264 mp4 whose size and frame count ffprobe confirms", async () => {
    const job = await client.runsync(endpointId, {
      prompt: "a test card slowly zooms in",
      image: imageDataUrl,
      size: "832*480",
      duration: 5,
      seed: 1234,
      num_inference_steps: 3,
      negative_prompt: "",
      guidance: 5,
      flow_shift: 5,
      enable_prompt_optimization: false,
      enable_safety_checker: false,
    });
    expect(job.status).toBe("COMPLETED");
    const output = job.output as Record<string, any>;
    expect(output).toMatchObject({ seed: 1234, fps: 16, frames: 9, model: "tiny" });
    // 832*480 is an area; the tiny config shrinks it to 64×64 keeping the 16:9 image's aspect.
    expect(output.width / output.height).toBeCloseTo(16 / 9, 0);
    expect(Object.keys(output.timings).sort()).toEqual(["decode", "denoise", "encode_video", "image_encode", "text_encode"]);
    expect(output.warnings.join(" ")).toContain("tiny");

    const response = await fetch(output.video_url, { headers: { Authorization: `Bearer ${platform.apiKey}` } });
    expect(response.status).toBe(200);
    const file = join(root, "..", "out.mp4");
    await writeFile(file, Buffer.from(await response.arrayBuffer()));
    expect(probe(file)).toEqual({ codec_name: "h264", width: output.width, height: output.height, r_frame_rate: "16/1", nb_read_frames: "9" });

    // The video is the API key holder's only.
    expect((await fetch(output.video_url)).status).toBe(401);
  });

  it("reports a random seed back when seed is -1", async () => {
    const job = await client.runsync(endpointId, { prompt: "p", image: imageDataUrl, seed: -1, num_inference_steps: 1 });
    expect(job.status).toBe("COMPLETED");
    const seed = (job.output as { seed: number }).seed;
    expect(Number.isInteger(seed)).toBe(true);
    expect(seed).toBeGreaterThanOrEqual(0);
  });

  it("answers HTTP 400 with a FAILED job naming the field for a bad input", async () => {
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
