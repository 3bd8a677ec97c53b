/** bench/build's pack case: svc:tar-pack alone over a tree of incompressible 16 MB files (goal: peak RSS ≤ 250 MB). */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeRandomFile } from "./_apps.ts";

type Child = (argv: string[]) => Promise<{ wallMs: number; result: { ms: number; maxRssMB: number; bytes?: number } }>;

export async function benchPack(child: Child, sizeMB: number) {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-bench-pack-")), "big-app");
  const fileMB = 16;
  const files = Math.ceil(sizeMB / fileMB);
  console.error(`generating ${files} × ${fileMB} MB of random data in ${dir} …`);
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `blobs${i % 8}`);
    mkdirSync(sub, { recursive: true });
    await writeRandomFile(join(sub, `blob-${String(i).padStart(4, "0")}.bin`), fileMB);
  }
  const pack = await child(["pack", dir]);
  const rss = pack.result.maxRssMB;
  rmSync(join(dir, ".."), { recursive: true, force: true });
  return {
    case: `pack ${sizeMB} MB incompressible`,
    pipeline: `${(pack.result.ms / 1000).toFixed(3)} s`,
    process: `${(pack.wallMs / 1000).toFixed(3)} s`,
    peakRss: `${rss.toFixed(0)} MB`,
    goal: `≤ 250 MB: ${rss <= 250 ? "met" : "MISSED"}`,
    note: `${((sizeMB / pack.result.ms) * 1000).toFixed(0)} MB/s, artifact ${(Number(pack.result.bytes) / 1e6).toFixed(0)} MB`,
  };
}
