/** bench/build's pack case: svc:tar-pack alone over a tree of incompressible 16 MB files (goal: peak RSS ≤ 250 MB). */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

type Child = (argv: string[]) => Promise<{ wallMs: number; result: { ms: number; maxRssMB: number; bytes?: number } }>;

export async function benchPack(child: Child, sizeMB: number) {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-bench-pack-")), "big-app");
  const fileMB = 16;
  const files = Math.ceil(sizeMB / fileMB);
  console.error(`generating ${files} × ${fileMB} MB of random data in ${dir} …`);
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `blobs${i % 8}`);
    mkdirSync(sub, { recursive: true });
    const out = createWriteStream(join(sub, `blob-${String(i).padStart(4, "0")}.bin`));
    for (let chunk = 0; chunk < fileMB; chunk++) if (!out.write(randomBytes(1 << 20))) await once(out, "drain");
    out.end();
    await once(out, "finish");
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
