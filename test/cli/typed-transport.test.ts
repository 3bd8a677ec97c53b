/**
 * The typed client's own HTTP/1.1 under Node (cli/commands/_typed-client.ts, NODE_TRANSPORT): what
 * it must read of real servers on loopback. A node:http server counts the sockets calls arrive on
 * (kept alive and reused; a socket the server closed while idle replaced without failing the call);
 * a raw TCP server answers in the shapes node:http does not make on request (no length, 100
 * Continue first, chunks split across packets, a broken status line). A script that made calls
 * exits by itself: idle sockets do not hold the process open.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createTcpServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { renderTypedClient } from "../../cli/commands/_typed-client.ts";
import type { Manifest } from "../../core/types.ts";

const TSX = fileURLToPath(new URL("../../node_modules/.bin/tsx", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "svc-typed-transport-"));
const FIXTURE_MANIFEST = fileURLToPath(new URL("../../fixtures/platform-app/svc_manifest.json", import.meta.url));

/** The typed client of fixtures/platform-app's `work` endpoint at `base`, written to `${name}.ts`. */
function writeClient(base: string, name: string): string {
  const manifest = JSON.parse(readFileSync(FIXTURE_MANIFEST, "utf8")) as Manifest;
  const file = join(scratch, `${name}.ts`);
  writeFileSync(file, renderTypedClient({ ...manifest, endpoints: { work: manifest.endpoints.work! }, urls: { work: base } }));
  return file;
}

/** That client, imported. */
async function clientAt(base: string, name: string) {
  const { createClient } = await import(writeClient(base, name));
  type Call = ((input: { text: string }) => Promise<unknown>) & { map(inputs: Iterable<{ text: string }>, o: { concurrency: number }): AsyncIterable<unknown> };
  return (createClient({ apiKey: "k" }) as { work: Call }).work;
}

const servers: Array<Server | ReturnType<typeof createTcpServer>> = [];
const listen = async <S extends Server | ReturnType<typeof createTcpServer>>(server: S): Promise<number> => {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
};
afterEach(async () => {
  for (const server of servers.splice(0)) {
    (server as Server).closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A stand-in for the platform's runsync: a COMPLETED job echoing the input, in the form `shape` says. */
function runsyncServer(shape: (socket: Socket, res: import("node:http").ServerResponse, json: string) => void) {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server = createHttpServer((req, res) => {
    sockets.add(req.socket);
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.socket.destroyed) return; // dropped unanswered (below)
      requests++;
      const { input } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      expect(req.headers.authorization).toBe("Bearer k");
      shape(req.socket, res, JSON.stringify({ id: `job_${requests}`, status: "COMPLETED", output: input }));
    });
  });
  return { server, sockets, requests: () => requests };
}

describe("the typed client's HTTP under Node", () => {
  it("keeps sockets alive: 200 calls one after another on one socket, a .map of 300 at concurrency 8 on at most 8; UTF-8 bodies whole", async () => {
    const stand = runsyncServer((_, res, json) =>
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(json) }).end(json),
    );
    const client = await clientAt(`http://127.0.0.1:${await listen(stand.server)}/v2/ep_work`, "kept");
    for (let i = 0; i < 200; i++) expect(await client({ text: `ünï ${i} 🎬` })).toEqual({ text: `ünï ${i} 🎬` });
    expect(stand.sockets.size).toBe(1);
    const out: unknown[] = [];
    for await (const result of client.map(
      Array.from({ length: 300 }, (_, i) => ({ text: String(i) })),
      { concurrency: 8 },
    ))
      out.push(result);
    expect(out).toEqual(Array.from({ length: 300 }, (_, i) => ({ text: String(i) })));
    expect(stand.sockets.size).toBeLessThanOrEqual(8);
    expect(stand.requests()).toBe(500);
  });

  it("a kept-alive socket the server closed while idle is replaced and the call goes through; `connection: close` and chunked answers are read", async () => {
    let n = 0;
    const stand = runsyncServer((_, res, json) => {
      n++;
      if (n % 3 === 0) return res.writeHead(200, { connection: "close", "content-length": Buffer.byteLength(json) }).end(json);
      if (n % 3 === 1) {
        res.writeHead(200, { "content-type": "application/json" }); // no length: chunked
        res.write(json.slice(0, 5));
        setTimeout(() => res.end(json.slice(5)), 5);
        return;
      }
      res.writeHead(200, { "content-length": Buffer.byteLength(json) }).end(json);
    });
    // A server's idle timeout that strikes as the next request arrives on the kept-alive socket:
    // the socket ends before anything is read (the request is not taken), the client must not fail the call.
    const served = new WeakMap<Socket, number>();
    stand.server.prependListener("request", (req) => {
      const count = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, count);
      if (count === 2) req.socket.destroy();
    });
    const client = await clientAt(`http://127.0.0.1:${await listen(stand.server)}/v2/ep_work`, "closed");
    for (let i = 0; i < 9; i++) expect(await client({ text: `call ${i}` })).toEqual({ text: `call ${i}` });
    expect(stand.requests()).toBe(9); // each call taken once
    expect(stand.sockets.size).toBeGreaterThanOrEqual(5);
  });

  it("reads answers node:http does not send: a body that ends with the connection, 100 Continue first, a head split across packets; refuses what is not HTTP", async () => {
    const body = JSON.stringify({ id: "job_1", status: "COMPLETED", output: { raw: true } });
    const answers = [
      `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n${body}`, // ends with the connection
      `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)};ext=1\r\n${body}\r\n0\r\nx-trailer: 1\r\n\r\n`,
      "SSH-2.0-OpenSSH_9.2\r\n\r\n",
    ];
    let next = 0;
    const server = createTcpServer((socket) => {
      const answer = answers[next++]!;
      socket.once("data", async () => {
        for (let at = 0; at < answer.length; at += 7) {
          socket.write(answer.slice(at, at + 7)); // a few bytes at a time
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        socket.end();
      });
    });
    const client = await clientAt(`http://127.0.0.1:${await listen(server)}/v2/ep_work`, "raw");
    for (let i = 0; i < 3; i++) expect(await client({ text: "x" })).toEqual({ raw: true });
    await expect(client({ text: "x" })).rejects.toThrow(/not an HTTP answer: "SSH-2.0/);
  });

  it("a script that made calls exits by itself: its idle kept-alive sockets do not hold the process", async () => {
    const stand = runsyncServer((_, res, json) => res.writeHead(200, { "content-length": Buffer.byteLength(json) }).end(json));
    stand.server.keepAliveTimeout = 0; // the server keeps idle sockets open for ever
    const base = `http://127.0.0.1:${await listen(stand.server)}/v2/ep_work`;
    writeClient(base, "exiting");
    writeFileSync(join(scratch, "package.json"), '{ "type": "module" }\n');
    writeFileSync(
      join(scratch, "script.ts"),
      `import { createClient } from "./exiting.ts";\nconst client = createClient({ apiKey: "k" });\nconsole.log(JSON.stringify(await Promise.all([1, 2, 3].map((i) => client.work({ text: String(i) })))));\n`,
    );
    const started = Date.now();
    const out = await new Promise<string>((resolve, reject) =>
      execFile(TSX, [join(scratch, "script.ts")], { cwd: scratch, timeout: 30_000 }, (error, stdout) => (error ? reject(error) : resolve(stdout))),
    );
    expect(JSON.parse(out)).toEqual([{ text: "1" }, { text: "2" }, { text: "3" }]);
    expect(stand.sockets.size).toBe(3);
    expect(Date.now() - started).toBeLessThan(25_000); // exited, not killed at 30 s
  });
});
