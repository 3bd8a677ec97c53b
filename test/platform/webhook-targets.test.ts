/**
 * Webhooks never go to the host's own addresses unless the operator allows them (issue 35,
 * finding 4; platform/queue/webhook-targets.ts): the address is checked where the connection is
 * made, after one resolution. A real receiver on loopback, the real sender, and a real platform
 * with a Python worker whose platform-key job names a loopback webhook. The refusal of a worker's
 * own job is test/platform/egress.test.ts (a `network=False` worker, in its sandbox).
 */
import { createServer, type Server } from "node:http";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWebhookAllow, resolveWebhookTarget, webhookRefusal } from "../../platform/queue/webhook-targets.ts";
import { createWebhookSender } from "../../platform/queue/webhooks.ts";
import { api, buildFixtureArtifact, deploy, startTestPlatform, waitFinal, waitFor, type TestPlatform } from "./_support.ts";

let receiver: Server;
let hookUrl: string;
const received: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      received.push(text);
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
});
afterAll(() => {
  receiver?.close();
});

describe("where a webhook may go", () => {
  const none = parseWebhookAllow("");

  it("refuses loopback, link-local, unspecified and the host's own addresses, in any spelling", () => {
    for (const address of ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "169.254.169.254", "0.0.0.0", "::", "fe80::1"])
      expect(webhookRefusal(address, address, none), address).toMatch(/loopback, link-local or unspecified/);
    const own = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && !i.internal && i.family === "IPv4")?.address;
    if (own) expect(webhookRefusal(own, own, none)).toMatch(/this host's own addresses/);
    expect(webhookRefusal("example.com", "93.184.215.14", none)).toBeUndefined();
  });

  it("lets through what SVC_WEBHOOK_ALLOW names: host names, addresses, CIDRs", () => {
    const allow = parseWebhookAllow(" localhost , 127.0.0.0/8, ::1 ");
    expect(webhookRefusal("localhost", "::1", allow)).toBeUndefined();
    expect(webhookRefusal("127.5.5.5", "127.5.5.5", allow)).toBeUndefined();
    expect(webhookRefusal("[::1]", "::1", allow)).toBeUndefined();
    expect(webhookRefusal("169.254.169.254", "169.254.169.254", allow)).toMatch(/link-local/);
    for (const bad of ["10.0.0.0/33", "http://x", "1.2.3.4/8/1"])
      expect(() => parseWebhookAllow(bad), bad).toThrow(expect.objectContaining({ code: "WEBHOOK_ALLOW_INVALID" }));
  });

  it("checks the name's resolved address: localhost is refused", async () => {
    await expect(resolveWebhookTarget("localhost", none)).rejects.toMatchObject({ code: "WEBHOOK_REFUSED" });
    expect(await resolveWebhookTarget("localhost", parseWebhookAllow("localhost"))).toMatch(/^(127\.0\.0\.1|::1)$/);
  });

  it("sends nothing to loopback without the allow list, once, and delivers with it", async () => {
    const logs: string[] = [];
    const refusing = createWebhookSender({ retries: 2, delayMs: 10, allow: none, log: (line) => logs.push(line) });
    refusing.send(hookUrl, '{"id":"refused"}');
    await refusing.idle();
    refusing.close();
    expect(received).not.toContain('{"id":"refused"}');
    expect(logs).toEqual([expect.stringMatching(/^webhook .* not sent: The platform does not send webhooks to 127\.0\.0\.1: .*loopback/)]);

    const allowed = createWebhookSender({ retries: 0, delayMs: 10, allow: parseWebhookAllow("127.0.0.1"), log: (line) => logs.push(line) });
    allowed.send(hookUrl, '{"id":"allowed"}');
    await allowed.idle();
    allowed.close();
    expect(received).toContain('{"id":"allowed"}');
  });
});

describe("a platform-key job with a loopback webhook", () => {
  let p: TestPlatform;
  const logs: string[] = [];
  beforeAll(async () => {
    p = await startTestPlatform({ log: (line) => logs.push(line), webhookAllow: "" });
  }, 60_000);
  afterAll(async () => {
    await p?.dispose();
  });

  it("runs, and its webhook is not sent", async () => {
    const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMax: 1 }]);
    const run = await api(p, "POST", `/v2/${endpoints.work!.id}/run`, { input: { op: "echo", value: "hook" }, webhook: hookUrl });
    expect(run.status).toBe(200);
    expect((await waitFinal(p, endpoints.work!.id, run.body.id)).status).toBe("COMPLETED");
    await waitFor("the refusal in the log", () => logs.find((line) => line.includes(`webhook ${hookUrl} not sent`)), 10_000);
    expect(received.filter((body) => body.includes(run.body.id))).toEqual([]);
  }, 120_000);
});
