/**
 * The named-connection flood (issue 35, finding 3): thousands of connections, each with an
 * `Authorization` header of its own making, each trickling its body a byte at a time, beside an
 * ordinary client that opens a fresh connection per request and must keep getting answers. The
 * caps count a connection against the identity its credential proves (platform/api/connection-identity.ts),
 * so made-up headers share one small budget; a verified key holding many slow connections is cut
 * back when all places are taken; a slow body is cut at `requestMs`. Bounded to run in seconds:
 * small caps, 1,500 connections, a byte every 2 s.
 */
import { request } from "node:http";
import { createConnection, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EndpointRecord } from "../../platform/store/endpoints.ts";
import { startTestPlatform, waitFor, type TestPlatform } from "./_support.ts";

const CAPS = { total: 200, perClient: 150, perWorker: 50, anonymous: 8, firstRequestMs: 2000, requestMs: 3000 };
const FLOOD = 1500;

/** Opens a connection that sends a whole header block (Content-Length 1000) and then one body byte every 2 s. */
function trickle(port: number, authorization: string): { socket: Socket; closed: Promise<void> } {
  const socket = createConnection({ host: "127.0.0.1", port });
  socket.on("error", () => undefined);
  socket.setNoDelay(true);
  socket.on("connect", () => {
    socket.write(
      `POST /v2/nowhere/run HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`,
    );
    const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(" ")), 2000);
    socket.once("close", () => clearInterval(timer));
  });
  socket.resume(); // read and drop answers
  return { socket, closed: new Promise((resolve) => socket.once("close", () => resolve())) };
}

/** One request on a fresh connection (no pool): the status, or the error's code when it got none. */
function ordinaryRequest(port: number, key: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/platform/limits", agent: false, headers: { authorization: `Bearer ${key}` }, timeout: 5000 },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end();
  });
}

describe("the named-connection flood", () => {
  let p: TestPlatform;
  let port: number;
  beforeAll(async () => {
    p = await startTestPlatform({ rateLimits: false, connectionLimits: CAPS });
    port = Number(new URL(p.url).port);
  }, 30_000);
  afterAll(async () => {
    await p?.dispose();
  });

  it("keeps answering an ordinary client while made-up keys and a verified key hold slow connections", async () => {
    // A worker key the platform signed (for an endpoint that need not exist): a verified identity holding its whole cap.
    const workerKey = p.context.workerKeys.keyFor({ id: "ep-flooder", environmentId: null, buildId: null } as unknown as EndpointRecord);
    const held = Array.from({ length: CAPS.perClient }, () => trickle(port, `Bearer ${workerKey}`));
    // Opened 100 at a time (a burst of thousands at once waits in the kernel's listen backlog, for everyone alike).
    const flood: Array<ReturnType<typeof trickle>> = [];
    const ramp = setInterval(() => {
      for (let i = 0; i < 100 && flood.length < FLOOD; i++) flood.push(trickle(port, `Bearer made-up-${flood.length}`));
      if (flood.length >= FLOOD) clearInterval(ramp);
    }, 50);
    const answers: Array<number | string> = [];
    // Throughout the flood (opened, then trickling) and until ten answers: each on a fresh connection, none may fail.
    const deadline = Date.now() + 40_000;
    while ((flood.length < FLOOD || answers.length < 10) && Date.now() < deadline) {
      answers.push(await ordinaryRequest(port, p.apiKey));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Made-up keys share the budget of the unverified: the rest are answered 429 and closed.
    const openFlood = () => flood.filter((c) => !c.socket.destroyed).length;
    await waitFor("the flood's connections past the unverified budget closed", () => openFlood() <= CAPS.anonymous, 20_000).catch(() => undefined);
    const left = openFlood();
    for (const c of [...held, ...flood]) c.socket.destroy();

    expect(answers.filter((a) => a !== 200)).toEqual([]);
    expect(answers.length).toBeGreaterThanOrEqual(10);
    expect(left).toBeLessThanOrEqual(CAPS.anonymous);
  }, 60_000);

  it("cuts a request whose body is not whole after requestMs", async () => {
    const slow = trickle(port, `Bearer ${p.apiKey}`);
    const started = Date.now();
    const cut = await Promise.race([
      slow.closed.then(() => Date.now() - started),
      new Promise<number>((resolve) => setTimeout(() => resolve(-1), CAPS.requestMs * 3)),
    ]);
    slow.socket.destroy();
    expect(cut).toBeGreaterThanOrEqual(CAPS.requestMs - 100);
  }, 30_000);

  it("answers connections past the shared budget of the unverified with 429 CONNECTION_LIMIT", async () => {
    const sockets: Socket[] = [];
    const statuses = await Promise.all(
      Array.from({ length: 12 }, () => {
        return new Promise<string>((resolve) => {
          const socket = createConnection({ host: "127.0.0.1", port }, () =>
            socket.write("GET /platform/limits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer made-up\r\n\r\n"),
          );
          sockets.push(socket);
          let text = "";
          socket.on("data", (d) => {
            text += d;
            if (text.includes("\r\n\r\n")) resolve(`${text.split(" ")[1]} ${/"code":"(\w+)"/.exec(text)?.[1] ?? ""}`.trim());
          });
          socket.on("error", () => resolve("reset"));
        });
      }),
    );
    for (const socket of sockets) socket.destroy(); // held until all answered: the budget is for connections open at once
    expect(statuses.filter((s) => s === "401 UNAUTHORIZED").length).toBeLessThanOrEqual(CAPS.anonymous);
    expect(statuses.filter((s) => s === "429 CONNECTION_LIMIT").length).toBeGreaterThanOrEqual(12 - CAPS.anonymous);
  }, 30_000);
});
