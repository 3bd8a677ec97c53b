/**
 * The platform's artifact unpack (prints figures, asserts nothing). Run:
 * npx tsx bench/platform/unpack.ts [--tree <site-packages folder>] [--rounds 5] [--dest <folder>]
 *
 * A dependency tree (by default a generated one shaped like runpod 1.12's: 6,000 small .py files in
 * 300 folders and four 8 MB binaries; or any folder, e.g. a tree from ~/.cache/svc/deps) is packed
 * once by svc's own writer (plugins/_tar.ts), then each round: `checkArtifact` (what the upload's
 * finalize runs), `unpackArtifact` (checks, svc's own reader and writer, the links verified, the
 * rename), and the peer, node-tar's synchronous extractor with no checks, on the same artifact. The
 * folder is written under --dest (default /dev/shm where it exists: a disk's own state after many
 * thousands of deletes moved a whole unpack 1 → 10 s between rounds here, whatever wrote it).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { extract } from "tar";
import { checkArtifact, unpackArtifact } from "../../platform/artifacts/unpack.ts";
import { type TarFile, writeTarGz } from "../../plugins/_tar.ts";

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : undefined;
};
const rounds = Number(option("rounds") ?? 5);
const work = mkdtempSync(join(tmpdir(), "svc-bench-unpack-"));
const destRoot = mkdtempSync(join(option("dest") ?? (existsSync("/dev/shm") ? "/dev/shm" : tmpdir()), "svc-bench-unpack-dest-"));

function generatedTree(root: string): void {
  for (let i = 0; i < 6000; i++) {
    const folder = join(root, `pkg${i % 300}`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, `module${i}.py`), `def f${i}(x):\n    return x * ${i}\n`.repeat(40 + (i % 200)));
  }
  for (let i = 0; i < 4; i++) writeFileSync(join(root, `native${i}.so`), randomBytes(8 << 20));
}

function filesOf(root: string): TarFile[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const source = join(entry.parentPath, entry.name);
      return { path: join("site-packages", relative(root, source)), source, size: statSync(source).size };
    });
}

const timed = async (run: () => Promise<unknown> | unknown) => {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await run();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - start, cpuMs: (used.user + used.system) / 1000 };
};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

try {
  const tree = option("tree") ?? join(work, "tree");
  if (!option("tree")) generatedTree(tree);
  const files = filesOf(tree);
  const artifact = join(work, "artifact.tar.gz");
  await writeTarGz(files, artifact);
  const cases: Record<string, Array<{ ms: number; cpuMs: number }>> = { check: [], unpack: [], "node-tar extract": [] };
  for (let round = 0; round < rounds; round++) {
    cases.check!.push(await timed(() => checkArtifact(artifact)));
    const ours = join(destRoot, `ours-${round}`);
    cases.unpack!.push(await timed(() => unpackArtifact(artifact, ours)));
    rmSync(ours, { recursive: true, force: true });
    const theirs = join(destRoot, `node-tar-${round}`);
    mkdirSync(theirs);
    cases["node-tar extract"]!.push(await timed(() => extract({ file: artifact, cwd: theirs, sync: true })));
    rmSync(theirs, { recursive: true, force: true });
  }
  const bytes = files.reduce((sum, file) => sum + file.size, 0);
  console.log(
    `unpack: ${files.length} files, ${(bytes / 1e6).toFixed(1)} MB → ${(statSync(artifact).size / 1e6).toFixed(1)} MB artifact, into ${destRoot}; median of ${rounds} rounds`,
  );
  for (const [name, runs] of Object.entries(cases)) {
    console.log(
      `  ${name.padEnd(17)} ${median(runs.map((r) => r.ms))
        .toFixed(0)
        .padStart(6)} ms wall, ${median(runs.map((r) => r.cpuMs))
        .toFixed(0)
        .padStart(6)} ms CPU`,
    );
  }
  const ratio = median(cases.unpack!.map((r) => r.ms)) / median(cases["node-tar extract"]!.map((r) => r.ms));
  console.log(`  unpack / node-tar extract: ${ratio.toFixed(2)}× (svc's with every entry checked and the links verified)`);
} finally {
  rmSync(work, { recursive: true, force: true });
  rmSync(destRoot, { recursive: true, force: true });
}
