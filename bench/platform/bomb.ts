/**
 * Artifact bombs against the embedded platform (prints figures, asserts nothing). Run:
 * npx tsx bench/platform/bomb.ts
 *
 * While the platform (its own process, the built package: bench/platform/_platform.ts) checks an
 * uploaded bomb, a client asks an endpoint's /health every 20 ms and the platform's RSS is sampled.
 * Two bombs:
 *   one entry     a 2 GiB file of zeros behind one tar header (refused at the header)
 *   many entries  2,048 files of 1 MiB zeros (refused at 1.5 GB, after inflating that much)
 * Goals (issue 7): platform RSS < 300 MB and /health < 100 ms throughout.
 */
import { readFileSync, rmSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { buildFixtureArtifact, deploy, gqlOk, tempDir } from "../../test/platform/_support.ts";
import { startBuiltPlatform } from "./_platform.ts";
import { rawHeader, zeroBomb } from "../../test/platform/_raw-tar.ts";

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

function manyEntries(count: number): Buffer {
  const zeros = Buffer.alloc(1 << 20);
  return Buffer.concat(
    Array.from({ length: count }, (_, i) => gzipSync(Buffer.concat([rawHeader({ name: `data/part-${i}.bin` }, zeros.length), zeros]), { level: 1 })),
  );
}

const dir = await tempDir("svc-platform-bomb-");
const { child, url, apiKey, pid } = await startBuiltPlatform(dir);
const p = { url, apiKey };
const headers = { authorization: `Bearer ${apiKey}` };
const lines: string[] = [];
try {
  const { endpoints } = await deploy(p, await buildFixtureArtifact(), [{ name: "work", workersMin: 0, workersMax: 1 }]);
  const health = `${url}/v2/${endpoints.work!.id}/health`;
  const { createApp } = await gqlOk<{ createApp: { id: string } }>(p, 'mutation { createApp(name: "bombs") { id } }');

  for (const [name, bomb] of [
    ["one 2 GiB entry", zeroBomb(rawHeader({ name: "app/zeros.bin" }, 2 * 1024 ** 3), 2)],
    ["2,048 entries of 1 MiB", manyEntries(2048)],
  ] as const) {
    const { prepareArtifactUpload: prep } = await gqlOk<{ prepareArtifactUpload: { uploadUrl: string } }>(
      p,
      "mutation($a: String!, $s: Int!) { prepareArtifactUpload(appId: $a, size: $s) { uploadUrl } }",
      { a: createApp.id, s: bomb.length },
    );
    const rssBefore = rssMb(pid);
    let peak = rssBefore;
    const latencies: number[] = [];
    let checking = true;
    const t0 = performance.now();
    const put = fetch(prep.uploadUrl, { method: "PUT", headers: { "content-type": "application/gzip" }, body: new Uint8Array(bomb) }).then(async (r) => {
      checking = false;
      return { status: r.status, body: await r.text(), ms: performance.now() - t0 };
    });
    while (checking) {
      const h0 = performance.now();
      await fetch(health, { headers }).then((r) => r.arrayBuffer());
      latencies.push(performance.now() - h0);
      peak = Math.max(peak, rssMb(pid));
      await new Promise((r) => setTimeout(r, 20));
    }
    const answer = await put;
    latencies.sort((a, b) => a - b);
    lines.push(
      `${name} (${(bomb.length / 1e6).toFixed(1)} MB gzip): HTTP ${answer.status} after ${answer.ms.toFixed(0)} ms; ` +
        `platform RSS ${rssBefore.toFixed(0)} → peak ${peak.toFixed(0)} MB; /health p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${pct(latencies, 100).toFixed(1)} ms (${latencies.length} calls)`,
      `  answer: ${answer.body.slice(0, 200)}`,
    );
  }
} finally {
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`\nartifact bombs (goals: RSS < 300 MB, /health < 100 ms)\n${lines.join("\n")}\n`);
