/**
 * The apps bench/build measures, written into a fresh folder each run:
 *   one-file   one queue endpoint in app.py
 *   n-file     app.py plus `count - 1` ordinary modules under pkg/ (a few functions each)
 *   data-tree  app.py plus `sizeMB` of incompressible data under data/ (mixed 8 MB and 1 MB files)
 */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createWriteStream, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const ENTRY = `"""The bench app's one endpoint."""
from svc import Endpoint


@Endpoint(name="echo", cpu="cpu3c-2-4", workers=(0, 1))
def echo(text: str = "") -> dict:
    return {"text": text}
`;

/** A plain module of about 1.2 KB: what most files of a bigger app look like. */
const moduleSource = (index: number) => `"""Helper module ${index} of the bench app."""
from dataclasses import dataclass

LIMIT_${index} = ${index}


@dataclass
class Record${index}:
    name: str
    value: int = ${index}

    def scaled(self, factor: int = 2) -> int:
        return self.value * factor


def helper_${index}(items: list[int]) -> int:
    total = 0
    for item in items:
        if item > LIMIT_${index}:
            total += item
        else:
            total -= item
    return total


def describe_${index}(record: Record${index}) -> str:
    return f"{record.name}={record.scaled()}"
`;

export function writeOneFileApp(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "app.py"), ENTRY);
}

export function writeManyFileApp(dir: string, count: number): void {
  writeOneFileApp(dir);
  mkdirSync(join(dir, "pkg"), { recursive: true });
  writeFileSync(join(dir, "pkg", "__init__.py"), "");
  for (let i = 0; i < count - 2; i++) writeFileSync(join(dir, "pkg", `mod_${String(i).padStart(4, "0")}.py`), moduleSource(i));
}

/** Writes `mb` MB of random (incompressible) bytes to `file`, 1 MB at a time. */
export async function writeRandomFile(file: string, mb: number): Promise<void> {
  const out = createWriteStream(file);
  for (let chunk = 0; chunk < mb; chunk++) if (!out.write(randomBytes(1 << 20))) await once(out, "drain");
  out.end();
  await once(out, "finish");
}

/** Writes `sizeMB` of random bytes under data/: as many 8 MB files as fit in 60 %, the rest in 1 MB files. */
export async function writeDataTreeApp(dir: string, sizeMB: number): Promise<{ files: number }> {
  writeOneFileApp(dir);
  const big = Math.floor((sizeMB * 0.6) / 8);
  const small = sizeMB - big * 8;
  const sizes = [...Array<number>(big).fill(8), ...Array<number>(small).fill(1)];
  for (const [i, mb] of sizes.entries()) {
    const sub = join(dir, "data", `part${i % 10}`);
    mkdirSync(sub, { recursive: true });
    await writeRandomFile(join(sub, `blob-${String(i).padStart(4, "0")}.bin`), mb);
  }
  return { files: sizes.length };
}
