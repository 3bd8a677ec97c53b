/**
 * Fuzz of the REST and GraphQL routes: thousands of malformed requests (methods, paths, headers,
 * bodies, deep nesting, bad lengths and encodings) sent as raw bytes over loopback to a real
 * platform with a real worker. No answer may be a 5xx, and the platform must serve normally
 * afterwards. Seeded, so a failure repeats; bounded in count and time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "node:net";
import { api, buildFixtureArtifact, deploy, gqlOk, startTestPlatform, waitFor, type TestPlatform } from "./_support.ts";

const REQUESTS = 3000;
const CONCURRENCY = 16;
const SEED = Number(process.env.SVC_FUZZ_SEED ?? 7);

let p: TestPlatform;
let work: string;
let host: string;

beforeAll(async () => {
  p = await startTestPlatform({ rateLimits: false, lbReadyWaitMs: 200 });
  const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMin: 1, workersMax: 1 }]);
  work = endpoints.work!.id;
  host = new URL(p.url).host;
  await waitFor("a warm worker", async () => (await api(p, "GET", `/v2/${work}/health`)).body.workers.idle === 1, 30_000);
}, 60_000);
afterAll(async () => p?.dispose());

/** mulberry32: a small seeded generator, so a failing case can be replayed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}
type Rand = ReturnType<typeof random>;

const junk = (r: Rand, n: number) =>
  Array.from({ length: n }, () => String.fromCharCode(r.pick([r.int(128), 0x20 + r.int(95), 0x80 + r.int(0x780), 0xd800 + r.int(0x800)]))).join("");

function jsonValue(r: Rand, depth = 0): unknown {
  const kind = r.int(depth > 3 ? 5 : 8);
  if (kind === 0) return null;
  if (kind === 1) return r.chance(0.5);
  if (kind === 2) return r.pick([0, -1, 1.5, 2 ** 53 + 1, 1e308, -1e-308, r.int(1e9)]);
  if (kind === 3) return junk(r, r.int(20));
  if (kind === 4) return r.pick(["", "IN_QUEUE", "__proto__", "constructor", "$ID", "../../etc/passwd"]);
  if (kind === 5) return Array.from({ length: r.int(4) }, () => jsonValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = r.int(4); i > 0; i--) o[r.pick(["input", "policy", "webhook", "x", "__proto__", "query", "variables", junk(r, 5)])] = jsonValue(r, depth + 1);
  return o;
}

const deep = (r: Rand) => {
  const n = r.pick([10, 255, 257, 1000, 1500, 5000, 20000]);
  const [open, close] = r.chance(0.5) ? ["[", "]"] : ['{"a":', "}"];
  return open.repeat(n) + "1" + close.repeat(r.chance(0.8) ? n : r.int(n));
};

const QUERIES = [
  "query { myself { id endpoints { id name gpuIds workersMin workersMax env { key value } } } }",
  "query($n: String!) { app(name: $n) { id } }",
  'mutation { createApp(name: "fz") { id } }',
  "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }",
  "mutation($id: String!) { deleteEndpoint(id: $id) }",
  "query($e: String!) { workerLogs(endpointId: $e) }",
  "mutation($a: String!, $s: Int!) { prepareArtifactUpload(appId: $a, size: $s) { uploadUrl } }",
  "{ __schema { types { name fields { name } } } }",
];

function graphqlBody(r: Rand): string {
  const mutate = (q: string) => {
    const at = r.int(q.length);
    return r.pick([q.slice(0, at), q.slice(0, at) + junk(r, 3) + q.slice(at), q.replace(/\{/g, "{ ".repeat(r.int(3) + 1)), q + "}".repeat(r.int(3))]);
  };
  const query = r.pick<unknown>([
    r.pick(QUERIES),
    mutate(r.pick(QUERIES)),
    `query { ${"myself { ".repeat(r.pick([10, 300, 3000]))}id${" }".repeat(50)} }`,
    `query { myself(${"a: [".repeat(r.pick([10, 2000]))}1 }`,
    jsonValue(r),
  ]);
  const variables = r.pick<unknown>([
    undefined,
    jsonValue(r),
    { i: jsonValue(r), n: jsonValue(r), id: work, e: work, a: "x", s: r.pick([-1, 1e12, 2 ** 31, 0]) },
    "x",
  ]);
  if (r.chance(0.1)) return `{"query": ${JSON.stringify(query)}, "variables": ${deep(r)}}`;
  return JSON.stringify({ query, variables, operationName: r.pick([undefined, null, "x", 5]) });
}

/** A route of the platform with its own method, or junk; mostly on the real endpoint. */
function restRoute(r: Rand): [method: string, path: string] {
  const ep = r.chance(0.8) ? work : r.pick(["nope", "", "%00", "..%2F..", "a".repeat(300)]);
  const job = r.pick(["", "x", "%2e%2e", "j".repeat(1000), "123"]);
  const [method, route] = r.pick<[string, string]>([
    ["POST", `/v2/${ep}/run`],
    ["POST", `/v2/${ep}/run`],
    ["POST", `/v2/${ep}/runsync?wait=${r.pick(["", "abc", "-5", "1e400", "1000", "NaN"])}`],
    ["POST", `/v2/${ep}/runsync?wait=1000`],
    ["GET", `/v2/${ep}/status/${job}`],
    ["GET", `/v2/${ep}/status-sync/${job}?wait=1000`],
    ["GET", `/v2/${ep}/stream/${job}`],
    ["POST", `/v2/${ep}/cancel/${job}`],
    ["POST", `/v2/${ep}/retry/${job}`],
    ["POST", `/v2/${ep}/purge-queue`],
    ["GET", `/v2/${ep}/health`],
    ["POST", "/graphql"],
    ["POST", "/graphql"],
    ["POST", "/graphql"],
    ["GET", `/v2/_worker/${junk(r, 4)}/job-take`],
    ["POST", `/v2/_worker/wk_${r.int(100)}/job-done/${job}`],
    ["PUT", `/v2/_artifacts/${job}?token=${junk(r, 8)}`],
    ["POST", `/lb/${ep}/${junk(r, 3)}`],
    ["GET", `/files/${job}`],
    ["GET", `/${junk(r, r.int(30))}`],
  ]);
  const verb = r.chance(0.85) ? method : r.pick(["POST", "GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "FOO"]);
  // percent-encode what a request line cannot carry raw
  return [verb, route.replace(/[^\x21-\x7e]/g, (c) => `%${(c.charCodeAt(0) & 0xff).toString(16).padStart(2, "0")}`)];
}

function runBody(r: Rand): string {
  return r.pick([
    JSON.stringify({ input: jsonValue(r) }),
    JSON.stringify(jsonValue(r)),
    `{"input": ${deep(r)}}`,
    `{"input": {"value": NaN}}`,
    `{"input": {"value": 123456789012345678901234567890}}`,
    `{"input": 1, "policy": ${JSON.stringify(jsonValue(r))}, "webhook": ${JSON.stringify(r.pick(["http://", "ftp://x", "javascript:1", junk(r, 10)]))}}`,
    `{"input": {}, "policy": {"executionTimeout": ${r.pick(["1e400", "-1", "4.5", '"x"', "null"])}, "ttl": 1e12}}`,
    `{"input": "${junk(r, 10)}`,
    junk(r, r.int(200)),
    "",
  ]);
}

interface Sent {
  request: Buffer;
  /** Whether the request, as sent, is complete: an incomplete one may get no answer. */
  complete: boolean;
}

function request(r: Rand): Sent {
  const [method, path] = restRoute(r);
  const isGraphql = path === "/graphql";
  let body = Buffer.from(isGraphql ? graphqlBody(r) : runBody(r));
  if (r.chance(0.05)) body = Buffer.concat([body, Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80])]);
  const headers: string[] = [`Host: ${r.chance(0.05) ? r.pick([`${work}.localhost`, "nope.localhost", "x".repeat(300)]) : host}`];
  const key = r.chance(0.85) ? r.pick([p.apiKey, `Bearer ${p.apiKey}`, `bearer  ${p.apiKey} `]) : r.pick(["Bearer", "", `Bearer ${junk(r, 40)}`]);
  if (key !== "" && !/[\r\n]/.test(key))
    headers.push(`Authorization: ${key.startsWith("Bearer") || key.startsWith("bearer") ? key : `Bearer ${key}`}`.replace(/[^\x20-\x7e]/g, "?"));
  headers.push(
    `Content-Type: ${r.pick(["application/json", "text/plain", "application/gzip", "multipart/form-data; boundary=x", "application/json; charset=latin1"])}`,
  );
  let complete = true;
  const framing = r.int(20);
  if (framing === 0) {
    headers.push("Transfer-Encoding: chunked");
    const chunked = `${body.length.toString(16)}\r\n${body.toString("latin1")}\r\n0\r\n\r\n`;
    body = Buffer.from(r.chance(0.7) ? chunked : chunked.replace(/^[0-9a-f]+/, r.pick(["zz", "-1", "ffffffffffff"])), "latin1");
  } else if (framing === 1) {
    headers.push(`Content-Length: ${body.length + 1 + r.int(100)}`); // promises more than comes
    complete = false;
  } else if (framing === 2) {
    headers.push(`Content-Length: ${r.pick(["-1", "abc", "1e3", "99999999999999999"])}`);
  } else if (framing === 3) {
    headers.push(`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`);
  } else {
    headers.push(`Content-Length: ${body.length}`);
  }
  if (r.chance(0.05)) headers.push(`X-Junk: ${"x".repeat(r.pick([10, 20_000, 70_000]))}`);
  if (r.chance(0.03)) headers.push("Expect: 100-continue");
  headers.push("Connection: close");
  const head = `${method} ${path} HTTP/1.1\r\n${headers.join("\r\n")}\r\n\r\n`;
  return { request: Buffer.concat([Buffer.from(head, "latin1"), body]), complete };
}

/** Sends raw bytes; answers the status code of the first response, or null when none came. */
function send(sent: Sent, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port: Number(new URL(p.url).port) });
    let data = "";
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(data.replace(/^HTTP\/1\.1 1\d\d[\s\S]*?\r\n\r\n/, "")); // past a 100 Continue
      resolve(m ? Number(m[1]) : null);
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on("data", (chunk) => {
      data += chunk.toString("latin1");
      if (/^HTTP\/1\.[01] [2-5]\d\d/m.test(data) && !sent.complete) finish();
    });
    socket.on("error", finish);
    socket.on("close", finish);
    socket.write(sent.request, () => {
      if (!sent.complete) setTimeout(() => socket.end(), 20); // then give up on the promised bytes
    });
  });
}

describe("fuzz", () => {
  it(`${REQUESTS} malformed REST and GraphQL requests: no 5xx, and the platform serves afterwards`, async () => {
    const r = random(SEED);
    const requests = Array.from({ length: REQUESTS }, () => request(r));
    const serverErrors: string[] = [];
    const counts = new Map<string, number>();
    let next = 0;
    const deadline = Date.now() + 120_000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length && Date.now() < deadline) {
          const sent = requests[next++]!;
          const status = await send(sent, 15_000);
          const key = status === null ? "none" : `${status}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
          if (status !== null && status >= 500) serverErrors.push(`${status}: ${sent.request.subarray(0, 300).toString("latin1")}`);
        }
      }),
    );
    expect(next).toBe(REQUESTS); // all sent within the time bound
    expect(serverErrors).toEqual([]);
    const answered = (from: number) => [...counts].reduce((n, [k, v]) => n + (Number(k) >= from && Number(k) < from + 100 ? v : 0), 0);
    expect(answered(200)).toBeGreaterThan(REQUESTS / 20); // the fuzz reaches the routes' work, not only their checks
    expect(answered(400)).toBeGreaterThan(REQUESTS / 3);
    expect(p.logs.filter((l) => l.startsWith("internal error"))).toEqual([]);

    const done = await api(p, "POST", `/v2/${work}/runsync`, { input: { op: "echo", value: "still here" } });
    expect(done.body).toMatchObject({ status: "COMPLETED", output: { echo: "still here" } });
    expect(await gqlOk(p, "query { myself { id } }")).toHaveProperty("myself");
  }, 180_000);
});
