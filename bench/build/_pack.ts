/**
 * bench/build's pack cases: svc:tar-pack alone over a tree of incompressible 16 MB files (goals: peak
 * RSS ≤ 250 MB, ≥ 150 MB/s) and over a source-like tree (generated Python text in 64 KB files, which
 * deflates), each packed twice from an empty .svc/ (the two sha256 must be equal).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeRandomFile } from "./_apps.ts";

type Child = (argv: string[]) => Promise<{ wallMs: number; result: { ms: number; maxRssMB: number; bytes?: number; unpacked?: number; sha256?: string } }>;

/** Python-looking text: varied names and numbers, so it deflates about as real sources do. */
function sourceLikeFile(seed: number, bytes: number): string {
  let state = seed >>> 0 || 1;
  const next = () => (state = (state * 1103515245 + 12345) >>> 0);
  const words = ["value", "result", "items", "config", "request", "frame", "index", "count", "model", "batch", "tensor", "path"];
  const word = () => `${words[next() % words.length]}_${next() % 97}`;
  let text = "";
  while (text.length < bytes) {
    text += `def ${word()}(${word()}, ${word()}=${next() % 1000}):\n    """Return the ${word()} of ${word()}."""\n    if ${word()} > ${next() % 50}:\n        return ${word()}(${word()}) + ${next() % 10000}\n    return [${word()} for ${word()} in ${word()}]\n\n\n`;
  }
  return text.slice(0, bytes);
}

async function packTwice(child: Child, dir: string, label: string, sizeMB: number, goal: (mbps: number, rss: number) => string) {
  const first = await child(["pack", dir]);
  rmSync(join(dir, ".svc"), { recursive: true, force: true });
  const second = await child(["pack", dir]);
  const mbps = (Number(first.result.unpacked) / 1e6 / first.result.ms) * 1000;
  const mbps2 = (Number(second.result.unpacked) / 1e6 / second.result.ms) * 1000;
  return {
    case: `pack ${sizeMB} MB ${label}`,
    pipeline: `${(first.result.ms / 1000).toFixed(3)} s, ${(second.result.ms / 1000).toFixed(3)} s`,
    process: `${(first.wallMs / 1000).toFixed(3)} s`,
    peakRss: `${first.result.maxRssMB.toFixed(0)} MB`,
    goal: goal(Math.min(mbps, mbps2), first.result.maxRssMB),
    note: `${mbps.toFixed(0)} / ${mbps2.toFixed(0)} MB/s, artifact ${(Number(first.result.bytes) / 1e6).toFixed(1)} MB, sha256 ${first.result.sha256 === second.result.sha256 ? "equal" : "DIFFERENT"} over two packs (${String(first.result.sha256).slice(0, 12)})`,
  };
}

export async function benchPack(child: Child, sizeMB: number, sourceMB = 256) {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-bench-pack-")), "big-app");
  const fileMB = 16;
  const files = Math.ceil(sizeMB / fileMB);
  console.error(`generating ${files} × ${fileMB} MB of random data in ${dir} …`);
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `blobs${i % 8}`);
    mkdirSync(sub, { recursive: true });
    await writeRandomFile(join(sub, `blob-${String(i).padStart(4, "0")}.bin`), fileMB);
  }
  const random = await packTwice(
    child,
    dir,
    "incompressible",
    sizeMB,
    (mbps, rss) => `≥ 150 MB/s: ${mbps >= 150 ? "met" : "MISSED"}; ≤ 250 MB RSS: ${rss <= 250 ? "met" : "MISSED"}`,
  );
  rmSync(join(dir, ".."), { recursive: true, force: true });

  const src = join(mkdtempSync(join(tmpdir(), "svc-bench-pack-src-")), "src-app");
  const fileBytes = 64 * 1024;
  const count = Math.ceil((sourceMB * 1e6) / fileBytes);
  console.error(`generating ${count} source-like files of 64 KB in ${src} …`);
  for (let i = 0; i < count; i++) {
    const sub = join(src, `pkg${i % 32}`);
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `module_${i}.py`), sourceLikeFile(i + 1, fileBytes));
  }
  const source = await packTwice(child, src, "source-like", sourceMB, () => "(figure only)");
  rmSync(join(src, ".."), { recursive: true, force: true });
  return [random, source];
}
