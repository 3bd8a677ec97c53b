/**
 * Worker cold start with and without the resource limits (issue 27): two platforms in this
 * process, one making a cgroup per worker and one with SVC_WORKER_CGROUPS=off (`cgroups: false`),
 * take turns starting a worker on a fresh endpoint; each start is the platform's own figure
 * (process start → first job-take, cgroup creation included). Prints medians and the ratio.
 *
 *   npx tsx bench/platform/cold-limits.ts [--rounds 10]
 */
import { rm } from "node:fs/promises";
import { startPlatform } from "../../platform/index.ts";
import { buildFixtureArtifact, deploy, gqlOk, saveEndpoint, tempDir } from "../../test/platform/_support.ts";

const args = process.argv.slice(2);
const ROUNDS = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 10;

const artifact = await buildFixtureArtifact();
const sides = await Promise.all(
  [true, false].map(async (cgroups) => {
    const dataDir = await tempDir("svc-bench-cold-");
    const platform = await startPlatform({ dataDir, port: 0, log: () => undefined, rateLimits: false, cgroups });
    const { buildId } = await deploy(platform, artifact, []);
    return { name: cgroups ? "cgroups" : "none", platform, dataDir, buildId, colds: [] as number[] };
  }),
);

async function coldStart(side: (typeof sides)[number]): Promise<number> {
  const ep = await saveEndpoint(side.platform, side.buildId, { name: "awork", workersMin: 0, workersMax: 1 });
  const r = await fetch(`${side.platform.url}/v2/${ep.id}/runsync`, {
    method: "POST",
    headers: { authorization: `Bearer ${side.platform.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ input: { value: 1 } }),
  });
  await r.text();
  const logs = await gqlOk<{ workerLogs: string[] }>(side.platform, "query($e: String!) { workerLogs(endpointId: $e) }", { e: ep.id });
  await gqlOk(side.platform, "mutation($id: String!) { deleteEndpoint(id: $id) }", { id: ep.id });
  const ready = logs.workerLogs.map((line) => /ready (\d+) ms after its process started/.exec(line)).find(Boolean);
  return Number(ready?.[1] ?? NaN);
}

await coldStart(sides[0]!); // the interpreter's files in the page cache for both
for (let i = 0; i < ROUNDS; i++) for (const side of i % 2 ? [...sides].reverse() : sides) side.colds.push(await coldStart(side));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const side of sides)
  console.log(
    `${side.name.padEnd(8)} cold start median ${median(side.colds)} ms (min ${Math.min(...side.colds)}, max ${Math.max(...side.colds)}, n ${side.colds.length})`,
  );
console.log(`ratio cgroups/none: ${(median(sides[0]!.colds) / median(sides[1]!.colds)).toFixed(2)}`);
for (const side of sides) {
  await side.platform.close();
  await rm(side.dataDir, { recursive: true, force: true });
}
