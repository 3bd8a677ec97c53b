/**
 * Embedded platform benchmark (prints figures, asserts nothing). Run: npx tsx bench/platform/run.ts
 *
 *   runsync round trip  no-op job, one warm worker, sequential: p50/p99 of the client's round trip
 *                       (the function itself takes ~0 ms, so this is all overhead: HTTP, queue,
 *                       SQLite, the worker's take/done calls)       goals p50 ≤ 2 ms, p99 ≤ 10 ms
 *   /run throughput     N no-op jobs submitted with 64 in flight, 4 warm workers: jobs/s from the
 *                       first submit to the last completion            goal ≥ 2,000 jobs/s
 *   cold start          process start → first job-take, fresh endpoints   goal ≤ 300 ms
 *   RSS                 the platform process after 100,000 jobs         goal flat, ≤ 300 MB
 *
 *   vs the peer         the hosted platform's local test server (PyPI runpod 1.12, handler.py
 *                       --rp_serve_api, handler returns its input; bench/platform/_peer.ts), same
 *                       client, interleaved (sequential: 10 slices a side, the order rotating):
 *                       sequential runsync p50/p99 and 32-concurrent runsync requests/s and p50
 *                       (--rounds runs a side, alternating); goals svc/peer sequential p50 ≤ 2×,
 *                       p99 ≤ 2×, 32-client throughput ≥ 1.2×, 32-client p50 ≤ 1.5×. Each side first serves
 *                       --warmup sequential requests: these servers run for hours, and Node's
 *                       JIT takes thousands of requests to settle (docs/platform.md, "Measuring")
 *   floor               a bare relay making svc's four crossings with no work between them
 *                       (bench/platform/_relay.ts), interleaved with the two above: what the
 *                       architecture costs before any of svc's code runs
 *   fan-out             .map over --map-inputs no-op inputs (default 10,000) from the Python runtime
 *                       and from the typed TypeScript client, each its own process outside any
 *                       worker, concurrency 32, beside 32-client runsync on the same endpoint
 *                       (2 workers), alternating, 2 rounds: items/s against runsync's requests/s
 *                       (goal ≥ 80 %) and the caller's RSS after 10 % and after all inputs (goal
 *                       flat) (bench/platform/_fanout.ts)
 *   scaling             200 concurrent runsync clients on a no-op endpoint (workers 0–4), under
 *                       QUEUE_DELAY and under REQUEST_COUNT (scalerValue 4): workers used,
 *                       p50/p99 (issue 19)
 *
 * The platform runs in its own process, from the built package as users run it, with rate limits
 * off; the workers are the real Python runtime on fixtures/platform-app.
 * Options: --jobs <n> throughput jobs (default 20000), --rss-jobs <n> (default 100000),
 * --samples <n> round trips (default 2000), --warmup <n> sequential requests before them (default
 * 3000, also before the round trip section), --skip-rss, --only <section,...> (roundtrip,
 * throughput, cold, peer, map, scale, rss), --peer-workers <n> (default 2), --seconds <n> per
 * concurrent run (default 5), --rounds <n> 32-client runs a side (default 3).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { availableParallelism } from "node:os";
import { createInterface } from "node:readline";
import { Pool } from "undici";
import { buildFixtureArtifact, deploy, gqlOk, saveEndpoint, tempDir, waitFor } from "../../test/platform/_support.ts";
import { startPeer } from "./_peer.ts";
import { PLATFORM_NODE_FLAGS } from "../../platform/ensure.ts";
import { startBuiltPlatform } from "./_platform.ts";
import { buildTsCaller, deployToEnvironment, pythonMap, typescriptMap } from "./_fanout.ts";
import { mkdirSync } from "node:fs";

const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const THROUGHPUT_JOBS = opt("--jobs", 20_000);
const RSS_JOBS = opt("--rss-jobs", 100_000);
const SAMPLES = opt("--samples", 2000);
const ONLY = args.includes("--only") ? new Set(args[args.indexOf("--only") + 1]!.split(",")) : undefined;
const want = (section: string) => (ONLY ? ONLY.has(section) : section !== "rss" || !args.includes("--skip-rss"));
const PEER_WORKERS = opt("--peer-workers", 2);
const SECONDS = opt("--seconds", 5);
const WARMUP = opt("--warmup", 3000);
const MAP_INPUTS = opt("--map-inputs", 10_000);
const SLICES = 10;
/** 32-client runs a side, alternating svc and peer (issue 28: the race that 4a315dd → e173a16 lost). */
const CONCURRENT_ROUNDS = opt("--rounds", 3);

const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
};
/** CPU seconds (user + system) of a process and of all its descendants (workers run under bwrap). */
const cpuSeconds = (pid: number): { self: number; children: number } => {
  const ticks = (id: string | number) => {
    try {
      const f = readFileSync(`/proc/${id}/stat`, "utf8").split(") ")[1]!.split(" ");
      return (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      return 0;
    }
  };
  const childrenOf = (id: string | number): string[] => {
    try {
      return readFileSync(`/proc/${id}/task/${id}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
    } catch {
      return []; // not Linux, or gone
    }
  };
  let children = 0;
  for (let level = childrenOf(pid); level.length > 0; level = level.flatMap(childrenOf)) children += level.reduce((sum, k) => sum + ticks(k), 0);
  return { self: ticks(pid), children };
};
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const fmt = (n: number, digits = 2) => n.toFixed(digits);

/** The floor (bench/platform/_relay.ts): the same four crossings as a svc runsync with no platform work between them. */
async function startRelay(dir: string): Promise<{ url: string; stop(): Promise<void> }> {
  const socket = resolve(dir, "relay.sock");
  const relay = spawn(process.execPath, [...PLATFORM_NODE_FLAGS, "--import", "tsx", resolve(import.meta.dirname, "_relay.ts"), socket], {
    stdio: ["ignore", "pipe", "inherit"],
    cwd: resolve(import.meta.dirname, "../.."),
  });
  const line = await new Promise<string>((res, rej) => {
    createInterface({ input: relay.stdout! }).once("line", res);
    relay.once("exit", (code) => rej(new Error(`the relay exited (${code})`)));
  });
  const { url } = JSON.parse(line) as { url: string };
  const env = { ...process.env, SVC_PLATFORM_SOCKET: socket, SVC_API_BASE: url };
  const worker = spawn(process.env.SVC_PYTHON ?? "python3", [resolve(import.meta.dirname, "_relay_worker.py")], { stdio: "inherit", env });
  const stopped = (child: ChildProcess) => new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once("exit", r)));
  return {
    url,
    async stop() {
      for (const child of [worker, relay]) child.kill("SIGTERM");
      await Promise.all([stopped(worker), stopped(relay)]);
    },
  };
}

const dir = await tempDir("svc-platform-bench-");
const server = await startBuiltPlatform(dir);
const p = { url: server.url, apiKey: server.apiKey };
const headers = { authorization: `Bearer ${p.apiKey}`, "content-type": "application/json" };
const pool = new Pool(p.url, { connections: 128, pipelining: 1 });
const call = async (method: "GET" | "POST", path: string, body?: unknown) => {
  const res = await pool.request({ method, path, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as any };
};
const results: Array<[string, string, string]> = [];
const NOOP_BODY = '{"input":{"op":"noop"}}';

/** Sequential runsync round trips (ms) against `base` + `path`, after `warmup` more on the same connection. */
async function sequential(base: string, path: string, hdrs: Record<string, string>, n: number, warmup = 20): Promise<number[]> {
  const one = new Pool(base, { connections: 1 });
  const rts: number[] = [];
  try {
    for (let i = 0; i < n + warmup; i++) {
      const t0 = performance.now();
      const res = await one.request({ method: "POST", path, headers: hdrs, body: NOOP_BODY });
      const body = (await res.body.json()) as { status: string };
      if (body.status !== "COMPLETED") throw new Error(JSON.stringify(body));
      if (i >= warmup) rts.push(performance.now() - t0);
    }
  } finally {
    await one.close();
  }
  return rts;
}

/** `clients` runsync loops for `seconds`: completed requests/s, latencies and the workers that answered. */
async function concurrent(base: string, path: string, hdrs: Record<string, string>, clients: number, seconds: number) {
  const many = new Pool(base, { connections: clients, pipelining: 1 });
  const latencies: number[] = [];
  /** Latencies of the requests started in the run's second half (after any scale-up). */
  const late: number[] = [];
  const workers = new Set<string>();
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  const half = t0 + (seconds * 1000) / 2;
  try {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < end) {
          const s = performance.now();
          const res = await many.request({ method: "POST", path, headers: hdrs, body: NOOP_BODY });
          const body = (await res.body.json()) as { status: string; workerId?: string };
          if (body.status !== "COMPLETED") throw new Error(JSON.stringify(body));
          latencies.push(performance.now() - s);
          if (s >= half) late.push(performance.now() - s);
          if (body.workerId) workers.add(body.workerId);
        }
      }),
    );
  } finally {
    await many.close();
  }
  return { rps: latencies.length / ((performance.now() - t0) / 1000), latencies: latencies.sort((a, b) => a - b), late: late.sort((a, b) => a - b), workers };
}

/** Side by side with the peer's local test server, interleaved so that both see the same machine load. */
async function versusPeer(buildId: string): Promise<void> {
  const ep = await saveEndpoint(p, buildId, { name: "peer-work", workersMin: PEER_WORKERS, workersMax: PEER_WORKERS });
  await waitFor(`${PEER_WORKERS} warm workers`, async () => (await call("GET", `/v2/${ep.id}/health`)).body.workers.idle === PEER_WORKERS, 30_000);
  const peer = await startPeer();
  const relay = await startRelay(dir);
  const json = { "content-type": "application/json" };
  const svcSide = { base: p.url, path: `/v2/${ep.id}/runsync`, hdrs: headers };
  const peerSide = { base: peer.url, path: "/runsync", hdrs: json };
  const relaySide = { base: relay.url, path: "/runsync", hdrs: json };
  const seq = { svc: [] as number[], peer: [] as number[], relay: [] as number[] };
  const rps = { svc: [] as number[], peer: [] as number[] };
  const p50 = { svc: [] as number[], peer: [] as number[] };
  const cpuPerJob = { platform: [] as number[], workers: [] as number[] };
  try {
    for (const side of [svcSide, peerSide, relaySide]) await sequential(side.base, side.path, side.hdrs, WARMUP);
    // Short slices in turn, the order rotating: a noisy second of the machine lands on every side alike.
    const sides = [
      ["svc", svcSide],
      ["peer", peerSide],
      ["relay", relaySide],
    ] as const;
    for (let slice = 0; slice < SLICES; slice++) {
      for (let k = 0; k < sides.length; k++) {
        const [name, side] = sides[(slice + k) % sides.length]!;
        seq[name].push(...(await sequential(side.base, side.path, side.hdrs, Math.ceil(SAMPLES / SLICES))));
      }
    }
    for (let round = 0; round < CONCURRENT_ROUNDS; round++) {
      for (const [name, side] of [
        ["svc", svcSide],
        ["peer", peerSide],
      ] as const) {
        const cpu0 = name === "svc" ? cpuSeconds(server.pid) : undefined;
        const r = await concurrent(side.base, side.path, side.hdrs, 32, SECONDS);
        rps[name].push(r.rps);
        p50[name].push(pct(r.latencies, 50));
        if (cpu0) {
          const cpu1 = cpuSeconds(server.pid);
          cpuPerJob.platform.push((cpu1.self - cpu0.self) / r.latencies.length);
          cpuPerJob.workers.push((cpu1.children - cpu0.children) / r.latencies.length);
        }
      }
    }
  } finally {
    await Promise.all([peer.stop(), relay.stop()]);
    await gqlOk(p, "mutation($id: String!) { deleteEndpoint(id: $id) }", { id: ep.id });
  }
  seq.svc.sort((a, b) => a - b);
  seq.peer.sort((a, b) => a - b);
  seq.relay.sort((a, b) => a - b);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const ratio = (a: number, b: number) => `${fmt(a / b)}×`;
  results.push([`vs peer (runpod 1.12 --rp_serve_api), svc with ${PEER_WORKERS} workers`, "svc / peer / ratio", "goal"]);
  results.push(["  sequential runsync p50", `${fmt(pct(seq.svc, 50))} / ${fmt(pct(seq.peer, 50))} ms / ${ratio(pct(seq.svc, 50), pct(seq.peer, 50))}`, "≤ 2×"]);
  results.push(["  sequential runsync p99", `${fmt(pct(seq.svc, 99))} / ${fmt(pct(seq.peer, 99))} ms / ${ratio(pct(seq.svc, 99), pct(seq.peer, 99))}`, "≤ 2×"]);
  results.push([
    "  floor: a bare relay with svc's four crossings, p50 / p99",
    `${fmt(pct(seq.relay, 50))} / ${fmt(pct(seq.relay, 99))} ms; relay / peer ${ratio(pct(seq.relay, 50), pct(seq.peer, 50))} / ${ratio(pct(seq.relay, 99), pct(seq.peer, 99))}`,
    "",
  ]);
  const runs = (xs: number[], digits: number) => xs.map((x) => fmt(x, digits)).join(" · ");
  results.push([
    "  32 concurrent runsync clients, requests/s",
    `${fmt(mean(rps.svc), 0)} / ${fmt(mean(rps.peer), 0)} / ${ratio(mean(rps.svc), mean(rps.peer))}`,
    "≥ 1.2×",
  ]);
  results.push(["    each run, alternating: svc; peer", `${runs(rps.svc, 0)}; ${runs(rps.peer, 0)}`, ""]);
  results.push([
    "  32 concurrent runsync clients, p50",
    `${fmt(mean(p50.svc))} / ${fmt(mean(p50.peer))} ms / ${ratio(mean(p50.svc), mean(p50.peer))}`,
    "≤ 1.5×",
  ]);
  results.push(["  svc CPU per job meanwhile: platform / workers", `${fmt(mean(cpuPerJob.platform) * 1000)} / ${fmt(mean(cpuPerJob.workers) * 1000)} ms`, ""]);
}

/** `.map` from both clients against the hot path's 32-client runsync on the same endpoint, alternating (bench/platform/_fanout.ts). */
async function fanOut(artifact: Awaited<ReturnType<typeof buildFixtureArtifact>>): Promise<void> {
  const work = await deployToEnvironment(p, artifact, PEER_WORKERS);
  await waitFor(`${PEER_WORKERS} warm workers`, async () => (await call("GET", `/v2/${work.id}/health`)).body.workers.idle === PEER_WORKERS, 30_000);
  const callerDir = resolve(dir, "ts-caller");
  mkdirSync(callerDir, { recursive: true });
  const tsMain = buildTsCaller(callerDir, p, work.url);
  await concurrent(p.url, `/v2/${work.id}/runsync`, headers, 32, 3); // warm-up
  const rows = { runsync: [] as number[], python: [] as number[], typescript: [] as number[] };
  const rss = { python: [] as string[], typescript: [] as string[] };
  for (let round = 0; round < 2; round++) {
    rows.runsync.push((await concurrent(p.url, `/v2/${work.id}/runsync`, headers, 32, SECONDS)).rps);
    const py = await pythonMap(p, MAP_INPUTS);
    const ts = await typescriptMap(tsMain, MAP_INPUTS);
    rows.python.push(py.perSecond);
    rows.typescript.push(ts.perSecond);
    rss.python.push(`${fmt(py.rssTenthMb, 0)} → ${fmt(py.rssEndMb, 0)}`);
    rss.typescript.push(`${fmt(ts.rssTenthMb, 0)} → ${fmt(ts.rssEndMb, 0)} (live heap ${fmt(ts.heapTenthMb ?? 0, 1)} → ${fmt(ts.heapEndMb ?? 0, 1)})`);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const share = (xs: number[]) => `${fmt((100 * mean(xs)) / mean(rows.runsync), 0)} %`;
  results.push([`.map over ${MAP_INPUTS} no-op inputs, concurrency 32, ${PEER_WORKERS} workers`, "items/s (each round); share of runsync", "goal"]);
  results.push(["  32-client runsync on the same endpoint, requests/s", rows.runsync.map((x) => fmt(x, 0)).join(" · "), ""]);
  results.push(["  Python .map (runtime fanout.py)", `${rows.python.map((x) => fmt(x, 0)).join(" · ")}; ${share(rows.python)}`, "≥ 80 %"]);
  results.push(["  TypeScript .map (svc client)", `${rows.typescript.map((x) => fmt(x, 0)).join(" · ")}; ${share(rows.typescript)}`, "≥ 80 %"]);
  results.push(["  caller RSS after 10 % → all inputs (MB): Python; TypeScript", `${rss.python.join(", ")}; ${rss.typescript.join(", ")}`, "flat"]);
}

/**
 * 200 concurrent runsync clients on a no-op endpoint that starts with no worker (workers 0–4),
 * under each scaler with scalerValue 4 (docs/platform.md, "Autoscaling"): QUEUE_DELAY adds a
 * worker only once a job waited 4 s, REQUEST_COUNT keeps ceil((queued + running) / 4) workers.
 */
async function scaling(buildId: string): Promise<void> {
  for (const [scalerType, goal] of [
    ["QUEUE_DELAY", "more only past a 4 s wait"],
    ["REQUEST_COUNT", "all 4 workers"],
  ] as const) {
    const ep = await saveEndpoint(p, buildId, {
      name: `scale-${scalerType.toLowerCase().replace("_", "")}-work`,
      workersMin: 0,
      workersMax: 4,
      scalerType,
      scalerValue: 4,
      idleTimeout: 5,
    });
    try {
      const r = await concurrent(p.url, `/v2/${ep.id}/runsync`, headers, 200, Math.max(SECONDS, 15));
      results.push([
        `200 concurrent runsync, workers 0–4 (${scalerType}, 4)`,
        `${r.workers.size} workers used; p50 ${fmt(pct(r.latencies, 50), 1)} ms, p99 ${fmt(pct(r.latencies, 99), 1)} ms (2nd half: ${fmt(pct(r.late, 50), 1)} / ${fmt(pct(r.late, 99), 1)} ms); ${fmt(r.rps, 0)} req/s`,
        goal,
      ]);
    } finally {
      await gqlOk(p, "mutation($id: String!) { deleteEndpoint(id: $id) }", { id: ep.id });
    }
  }
}

try {
  const artifact = await buildFixtureArtifact();
  const { buildId, endpoints } = await deploy(p, artifact, [{ name: "work", workersMin: 1, workersMax: 1 }]);
  const work = endpoints.work!.id;
  const rssStart = rssMb(server.pid);

  // ---- runsync round trip
  if (want("roundtrip")) {
    await waitFor("a warm worker", async () => (await call("GET", `/v2/${work}/health`)).body.workers.idle === 1, 30_000);
    const single = new Pool(p.url, { connections: 1 });
    const once = async () => {
      const t0 = performance.now();
      const res = await single.request({ method: "POST", path: `/v2/${work}/runsync`, headers, body: '{"input":{"op":"noop"}}' });
      const body = (await res.body.json()) as { status: string; executionTime: number };
      if (body.status !== "COMPLETED") throw new Error(JSON.stringify(body));
      return { rt: performance.now() - t0, exec: body.executionTime };
    };
    for (let i = 0; i < WARMUP; i++) await once();
    const rts: number[] = [];
    const execs: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const { rt, exec } = await once();
      rts.push(rt);
      execs.push(exec);
    }
    rts.sort((a, b) => a - b);
    execs.sort((a, b) => a - b);
    results.push(["runsync round trip p50 / p99", `${fmt(pct(rts, 50))} ms / ${fmt(pct(rts, 99))} ms`, "p50 ≤ 2 ms, p99 ≤ 10 ms"]);
    results.push(["  of which the worker (executionTime p50)", `${pct(execs, 50)} ms`, "(Python runtime: take → done)"]);
    await single.close();
  }

  // health counts retained jobs (runsync results are pruned after 1 min): wait for an empty queue instead
  const drained = async () => {
    const h = (await call("GET", `/v2/${work}/health`)).body.jobs;
    return h.inQueue === 0 && h.inProgress === 0;
  };
  const submitAll = async (n: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < n) {
          next++;
          const r = await call("POST", `/v2/${work}/run`, { input: { op: "noop" } });
          if (r.status !== 200) throw new Error(JSON.stringify(r));
        }
      }),
    );
  };
  // ---- /run throughput, 4 workers
  if (want("throughput")) {
    const { saveEndpoint: four } = await gqlOk<any>(p, "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }", {
      i: { id: work, name: "work", workersMin: 4, workersMax: 4, buildId },
    });
    await waitFor("4 warm workers", async () => (await call("GET", `/v2/${four.id}/health`)).body.workers.idle === 4, 30_000);
    const cpu0 = cpuSeconds(server.pid);
    const client0 = process.cpuUsage();
    const t0 = performance.now();
    await submitAll(THROUGHPUT_JOBS);
    const submitted = performance.now();
    await waitFor("all jobs to complete", drained, 600_000, 50);
    const elapsed = (performance.now() - t0) / 1000;
    const cpu1 = cpuSeconds(server.pid);
    const client1 = process.cpuUsage(client0);
    results.push([`/run throughput, 4 workers (${THROUGHPUT_JOBS} jobs)`, `${fmt(THROUGHPUT_JOBS / elapsed, 0)} jobs/s`, "≥ 2,000 jobs/s"]);
    results.push(["  submission alone (64 in flight)", `${fmt(THROUGHPUT_JOBS / ((submitted - t0) / 1000), 0)} jobs/s`, ""]);
    results.push([
      "  CPU used meanwhile: platform / 4 workers / bench client",
      `${fmt(cpu1.self - cpu0.self, 1)} s / ${fmt(cpu1.children - cpu0.children, 1)} s / ${fmt((client1.user + client1.system) / 1e6, 1)} s`,
      `in ${fmt(elapsed, 1)} s wall on ${availableParallelism()} CPUs`,
    ]);
  }

  // ---- cold start
  if (want("cold")) {
    const colds: number[] = [];
    for (let i = 0; i < 5; i++) {
      const cold = await saveEndpoint(p, buildId, { name: "awork", workersMin: 0, workersMax: 1 });
      const c0 = performance.now();
      const r = await call("POST", `/v2/${cold.id}/runsync`, { input: { value: 1 } });
      const firstJob = performance.now() - c0;
      if (r.body.status !== "COMPLETED") throw new Error(JSON.stringify(r.body));
      const logs = await gqlOk<{ workerLogs: string[] }>(p, "query($e: String!) { workerLogs(endpointId: $e) }", { e: cold.id });
      const ready = logs.workerLogs.map((l) => /ready (\d+) ms after its process started/.exec(l)).find(Boolean);
      colds.push(Number(ready?.[1] ?? NaN));
      if (i === 0) results.push(["  first runsync on a cold endpoint", `${fmt(firstJob, 0)} ms`, ""]);
      await gqlOk(p, "mutation($id: String!) { deleteEndpoint(id: $id) }", { id: cold.id });
    }
    colds.sort((a, b) => a - b);
    results.splice(results.length - 1, 0, [
      "worker cold start (process start → first job-take), median of 5",
      `${colds[2]} ms (min ${colds[0]}, max ${colds[4]})`,
      "≤ 300 ms",
    ]);
  }

  if (want("peer")) await versusPeer(buildId);
  if (want("map")) await fanOut(artifact);
  if (want("scale")) await scaling(buildId);

  // ---- RSS after 100,000 jobs
  if (want("rss")) {
    const rssBefore = rssMb(server.pid);
    const samples: string[] = [];
    const chunk = RSS_JOBS / 4;
    for (let i = 1; i <= 4; i++) {
      await submitAll(chunk);
      await waitFor("jobs to complete", drained, 600_000, 200);
      samples.push(`${fmt(rssMb(server.pid), 0)}`);
    }
    results.push([
      `platform RSS: start / before / after each ${chunk} jobs (MB)`,
      `${fmt(rssStart, 0)} / ${fmt(rssBefore, 0)} / ${samples.join(" / ")}`,
      "flat, ≤ 300 MB",
    ]);
  }
} finally {
  await pool.close().catch(() => {});
  server.child.kill("SIGTERM");
  await new Promise((r) => server.child.once("exit", r));
  rmSync(dir, { recursive: true, force: true });
}

const width = Math.max(...results.map((r) => r[0].length));
process.stdout.write("\nembedded platform benchmark\n");
for (const [what, value, goal] of results) process.stdout.write(`${what.padEnd(width)}  ${value.padEnd(34)} ${goal}\n`);
