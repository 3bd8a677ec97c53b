/**
 * An endpoint made the hosted way — a template naming a container image, an endpoint on that
 * template, no svc build (the hosted SDK's create_template + create_endpoint; hosted-sdk.test.ts
 * drives the real SDK through it too) — can never start a worker here: its jobs fail at once with
 * IMAGE_NOT_RUNNABLE naming the image and what the platform runs, and its /health and logs say the
 * same (docs/platform.md, "Endpoints without a build"). Real platform on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, gqlOk, startTestPlatform, waitFinal, type TestPlatform } from "./_support.ts";

const IMAGE = "ghcr.io/example/worker:1.0";
let p: TestPlatform;

beforeAll(async () => {
  p = await startTestPlatform();
}, 30_000);
afterAll(async () => p?.dispose());

async function imageEndpoint(name: string, type: "QB" | "LB"): Promise<string> {
  const { saveTemplate } = await gqlOk<{ saveTemplate: { id: string } }>(p, "mutation($i: SaveTemplateInput!) { saveTemplate(input: $i) { id } }", {
    i: { name: `${name}-tpl`, imageName: IMAGE, isServerless: true },
  });
  const { saveEndpoint } = await gqlOk<{ saveEndpoint: { id: string } }>(p, "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }", {
    i: { name, type, templateId: saveTemplate.id, workersMax: 2 },
  });
  return saveEndpoint.id;
}

describe("an endpoint whose image the embedded platform cannot run", () => {
  it("fails its jobs at once naming the image; /health and the logs say the same", async () => {
    const id = await imageEndpoint("image-only", "QB");
    const job = (await api(p, "POST", `/v2/${id}/run`, { input: { x: 1 } })).body.id as string;
    const final = await waitFinal(p, id, job, 10_000); // far below any execution timeout: it never waits for a worker
    expect(final.status).toBe("FAILED");
    const error = JSON.parse(final.error);
    expect(error).toMatchObject({ error_type: "IMAGE_NOT_RUNNABLE", error_message: expect.stringContaining(`"${IMAGE}"`) });
    expect(error.error_message).toContain("runs svc builds");
    expect(error.remedy).toContain("svc deploy");

    const sync = await api(p, "POST", `/v2/${id}/runsync`, { input: { x: 2 } });
    expect(sync.body.status).toBe("FAILED");

    const health = (await api(p, "GET", `/v2/${id}/health`)).body;
    expect(health.error).toMatchObject({ error_type: "IMAGE_NOT_RUNNABLE", error_message: error.error_message });
    expect(health.workers).toMatchObject({ running: 0 });
    const { workerLogs } = await gqlOk<{ workerLogs: string[] }>(p, "query($e: String!) { workerLogs(endpointId: $e) }", { e: id });
    expect(workerLogs.some((line) => line.includes("job(s) failed") && line.includes(IMAGE))).toBe(true);
  }, 30_000);

  it("a load-balanced one answers 503 at once naming the image, without waiting for a worker", async () => {
    const id = await imageEndpoint("image-only-lb", "LB");
    const res = await fetch(`${p.url}/lb/${id}/hello`, { headers: { authorization: `Bearer ${p.apiKey}` } });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: string }).error).toContain(`"${IMAGE}"`);
  }, 30_000);
});
