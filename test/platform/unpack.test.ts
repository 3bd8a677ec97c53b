/** Safe unpacking: absolute paths, '..', escaping links, devices, writes through links and bombs are refused. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { OwnTarReader, type OwnTarEntry } from "../../platform/artifacts/_own-tar.ts";
import { BuildUnpacker, checkArtifact, unpackArtifact } from "../../platform/artifacts/unpack.ts";
import { type TarFile, writeTarGz } from "../../plugins/_tar.ts";
import { tempDir } from "./_support.ts";
import { rawHeader, rawTar, zeroBomb, type RawEntry } from "./_raw-tar.ts";

let dir: string;
const write = (name: string, entries: RawEntry[]) => {
  const file = join(dir, name);
  writeFileSync(file, rawTar(entries));
  return file;
};

beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("artifact unpacking", () => {
  it("unpacks a safe artifact, links inside the folder included", async () => {
    const file = write("ok.tar.gz", [
      { name: "svc_manifest.json", body: "{}" },
      { name: "app/", type: "5" },
      { name: "app/a.py", body: "x = 1\n" },
      { name: "app/link.py", type: "2", link: "a.py" },
      { name: "./hard.py", type: "1", link: "app/a.py" },
    ]);
    await checkArtifact(file);
    const dest = join(dir, "out-ok");
    await unpackArtifact(file, dest);
    expect(readFileSync(join(dest, "app/link.py"), "utf8")).toBe("x = 1\n");
    expect(readFileSync(join(dest, "hard.py"), "utf8")).toBe("x = 1\n");
  });

  it("waits for the parser's drain without piling up listeners (no MaxListenersExceededWarning)", async () => {
    const random = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7919 + 13) % 251)).toString("latin1");
    const file = write(
      "many.tar.gz",
      Array.from({ length: 64 }, (_, i) => ({ name: `app/f${i}.bin`, body: random(256 * 1024) })),
    );
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      await unpackArtifact(file, join(dir, "out-many"));
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    } finally {
      process.off("warning", onWarning);
    }
    expect(existsSync(join(dir, "out-many/app/f63.bin"))).toBe(true);
    expect(warnings).not.toContain("MaxListenersExceededWarning");
  });

  const unsafe: Array<[string, RawEntry[], RegExp]> = [
    ["an absolute path", [{ name: "/tmp/svc-evil-abs", body: "x" }], /absolute path/],
    ["'..' in a path", [{ name: "app/../../evil", body: "x" }], /'\.\.'/],
    ["a symlink to an absolute path", [{ name: "etc", type: "2", link: "/etc" }], /absolute path/],
    [
      "a symlink escaping with ..",
      [
        { name: "app/", type: "5" },
        { name: "app/up", type: "2", link: "../../outside" },
      ],
      /escapes the folder/,
    ],
    [
      "a write through a symlink",
      [
        { name: "l", type: "2", link: "." },
        { name: "l/x", body: "x" },
      ],
      /through or replaces a link/,
    ],
    [
      "a chain of links that escapes",
      [
        { name: "x/", type: "5" },
        { name: "x/l", type: "2", link: ".." },
        { name: "y", type: "2", link: "x/l/.." },
      ],
      /through another link|escapes/,
    ],
    ["a hard link to an absolute path", [{ name: "h", type: "1", link: "/etc/passwd" }], /absolute path/],
    ["a device file", [{ name: "dev", type: "3" }], /CharacterDevice entries are not allowed/],
    ["a FIFO", [{ name: "fifo", type: "6" }], /FIFO entries are not allowed/],
  ];

  for (const [what, entries, why] of unsafe) {
    it(`refuses ${what}, when checking and when unpacking`, async () => {
      const file = write(`bad-${what.replace(/\W+/g, "-")}.tar.gz`, entries);
      await expect(checkArtifact(file)).rejects.toMatchObject({ code: "ARTIFACT_UNSAFE", message: expect.stringMatching(why) });
      const dest = join(dir, `out-${what.replace(/\W+/g, "-")}`);
      await expect(unpackArtifact(file, dest)).rejects.toMatchObject({ code: "ARTIFACT_UNSAFE" });
      expect(existsSync(dest)).toBe(false);
      expect(existsSync("/tmp/svc-evil-abs")).toBe(false);
      expect(existsSync(join(dir, "outside"))).toBe(false);
    });
  }

  it("refuses bytes that are not a tar.gz", async () => {
    const file = join(dir, "junk.tar.gz");
    writeFileSync(file, gzipSync(Buffer.from("not a tar at all, just text".repeat(40))));
    await expect(checkArtifact(file)).rejects.toMatchObject({ code: "ARTIFACT_UNSAFE" });
  });
});

describe("artifact limits (docs/platform.md, Limits)", () => {
  const TWO_GIB = 2 * 1024 ** 3;

  it("refuses a 2 GiB zero bomb behind one tar header at that entry, without expanding it", async () => {
    const file = join(dir, "bomb.tar.gz");
    writeFileSync(file, zeroBomb(rawHeader({ name: "app/zeros.bin" }, TWO_GIB), 2));
    const t0 = performance.now();
    const error = await checkArtifact(file).catch((e) => e);
    expect(error).toMatchObject({
      code: "ARTIFACT_LIMIT",
      message: expect.stringContaining('entry "app/zeros.bin": the artifact unpacks to more than 1.5 GB'),
    });
    expect(error.message).not.toContain(dir);
    expect(performance.now() - t0).toBeLessThan(5000); // refused at the header, not after 2 GiB of inflate
    const dest = join(dir, "out-bomb");
    await expect(unpackArtifact(file, dest)).rejects.toMatchObject({ code: "ARTIFACT_LIMIT" });
    expect(existsSync(dest)).toBe(false);
  });

  it("refuses a gzip of zeros that is no archive; stops reading at an archive's end", async () => {
    const zeros = join(dir, "zeros.tar.gz");
    writeFileSync(zeros, zeroBomb(Buffer.alloc(0), 2));
    const error = await checkArtifact(zeros).catch((e) => e);
    expect(error).toMatchObject({ code: "ARTIFACT_UNSAFE", message: expect.stringContaining("not a readable .tar.gz") });
    expect(error.message).not.toContain(dir);
    // A good archive followed by 2 GiB of zeros: its two end blocks end it, the rest is never inflated.
    const trailing = join(dir, "trailing.tar.gz");
    writeFileSync(trailing, zeroBomb(gunzipSync(rawTar([{ name: "svc_manifest.json", body: "{}" }])), 2));
    const t0 = performance.now();
    await expect(checkArtifact(trailing)).resolves.toEqual({ entries: 1, bytes: 2 });
    const dest = join(dir, "out-trailing");
    await unpackArtifact(trailing, dest);
    expect(readFileSync(join(dest, "svc_manifest.json"), "utf8")).toBe("{}");
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it("counts the bytes of entries tar skips (an unknown type announcing 2 GiB)", async () => {
    const file = join(dir, "skipped.tar.gz");
    writeFileSync(file, zeroBomb(rawHeader({ name: "app/odd", type: "Z" as RawEntry["type"] }, TWO_GIB), 2));
    const error = await checkArtifact(file).catch((e) => e);
    expect(error).toMatchObject({ code: "ARTIFACT_LIMIT", message: expect.stringContaining("tar stream holds") });
    expect(error.message).not.toContain(dir);
  });

  it("refuses more entries than the limit, naming the first one over", async () => {
    const file = write(
      "many.tar.gz",
      Array.from({ length: 6 }, (_, i) => ({ name: `app/f${i}.py`, body: "x" })),
    );
    await expect(checkArtifact(file, { maxBytes: 1e9, maxEntries: 5 })).rejects.toMatchObject({
      code: "ARTIFACT_LIMIT",
      message: expect.stringContaining('entry "app/f5.py": the artifact has more than 5 entries'),
    });
    await expect(unpackArtifact(file, join(dir, "out-many"), { maxBytes: 1e9, maxEntries: 5 })).rejects.toMatchObject({ code: "ARTIFACT_LIMIT" });
    await expect(checkArtifact(file, { maxBytes: 1e9, maxEntries: 6 })).resolves.toEqual({ entries: 6, bytes: 6 });
  });
});

describe("BuildUnpacker", () => {
  it("unpacks a build once for concurrent callers, and tries a failed one again", async () => {
    const unpacker = new BuildUnpacker(join(dir, "builds"));
    const missing = join(dir, "not-yet.tar.gz");
    await expect(unpacker.ensure("bld_1", missing)).rejects.toThrow();
    write("not-yet.tar.gz", [{ name: "svc_manifest.json", body: "{}" }]);
    const both = [unpacker.ensure("bld_1", missing), unpacker.ensure("bld_1", missing)];
    expect(both[0]).toBe(both[1]);
    expect(await both[0]).toBe(unpacker.dirOf("bld_1"));
    expect(readFileSync(join(unpacker.dirOf("bld_1"), "svc_manifest.json"), "utf8")).toBe("{}");
  });

  it("links a new build's unchanged files to the app's last build, writes the rest, and shares nothing across apps", async () => {
    const src = join(dir, "link-src");
    mkdirSync(join(src, "svc"), { recursive: true });
    const put = (path: string, body: string | Buffer) => writeFileSync(join(src, path), body);
    const pack = async (name: string) => {
      const paths = ["app.py", "same-size.py", "svc/worker.py", "big.bin"];
      const files: TarFile[] = paths.map((path) => ({ path, source: join(src, path), size: statSync(join(src, path)).size }));
      const out = join(dir, name);
      await writeTarGz(files, out);
      return out;
    };
    put("app.py", "GREETING = 'v1'\n");
    put("same-size.py", "x = 1\n");
    put("svc/worker.py", "def serve(): ...\n");
    put("big.bin", randomBytes((1 << 20) + 1)); // over the size held for comparing: always written
    const first = await pack("link-1.tar.gz");
    put("app.py", "GREETING = 'version 2'\n");
    put("same-size.py", "x = 2\n"); // same size and mode, other bytes
    const second = await pack("link-2.tar.gz");

    const unpacker = new BuildUnpacker(join(dir, "link-builds"));
    const a1 = await unpacker.ensure("bld_a1", first, "app_a");
    const a2 = await unpacker.ensure("bld_a2", second, "app_a");
    const b1 = await unpacker.ensure("bld_b1", second, "app_b");
    const inode = (root: string, path: string) => statSync(join(root, path)).ino;
    expect(inode(a2, "svc/worker.py")).toBe(inode(a1, "svc/worker.py"));
    expect(inode(a2, "same-size.py")).not.toBe(inode(a1, "same-size.py"));
    expect(inode(a2, "app.py")).not.toBe(inode(a1, "app.py"));
    expect(inode(a2, "big.bin")).not.toBe(inode(a1, "big.bin"));
    expect(readFileSync(join(a2, "same-size.py"), "utf8")).toBe("x = 2\n");
    expect(readFileSync(join(a2, "app.py"), "utf8")).toBe("GREETING = 'version 2'\n");
    expect(readFileSync(join(a1, "app.py"), "utf8")).toBe("GREETING = 'v1'\n");
    expect(readFileSync(join(a2, "big.bin")).equals(readFileSync(join(src, "big.bin")))).toBe(true);
    // another app's build of the same bytes links to nothing of app_a's
    for (const path of ["svc/worker.py", "app.py", "same-size.py"]) expect(inode(b1, path)).not.toBe(inode(a2, path));

    // the base gone: the next build is written whole
    await rm(a2, { recursive: true });
    const a3 = await unpacker.ensure("bld_a3", first, "app_a");
    expect(readFileSync(join(a3, "app.py"), "utf8")).toBe("GREETING = 'v1'\n");
    expect(inode(a3, "svc/worker.py")).not.toBe(inode(a1, "svc/worker.py"));
  });

  it("says how many files it linked, and links none from a base whose bytes differ", async () => {
    const src = join(dir, "count-src");
    mkdirSync(src, { recursive: true });
    const files: TarFile[] = ["a.py", "b.py"].map((path) => {
      writeFileSync(join(src, path), `${path}\n`);
      return { path, source: join(src, path), size: 5 };
    });
    const artifact = join(dir, "count.tar.gz");
    await writeTarGz(files, artifact);
    const base = join(dir, "count-base");
    expect(await unpackArtifact(artifact, base)).toEqual({ plain: true, linked: 0 });
    expect(await unpackArtifact(artifact, join(dir, "count-next"), undefined, base)).toEqual({ plain: true, linked: 2 });
    writeFileSync(join(base, "a.py"), "a.PY\n"); // same size and mode: compared byte for byte
    expect(await unpackArtifact(artifact, join(dir, "count-other"), undefined, base)).toEqual({ plain: true, linked: 1 });
    expect(readFileSync(join(dir, "count-other/a.py"), "utf8")).toBe("a.py\n");
  });
});

/** The entries (with their bytes) svc's own reader gives for a tar pushed in chunks of `chunk` bytes; undefined when it declines. */
function readOwn(tar: Buffer, chunk = tar.length): Array<OwnTarEntry & { data: Buffer }> | undefined {
  const entries: Array<OwnTarEntry & { data: Buffer }> = [];
  let parts: Buffer[] = [];
  const reader = new OwnTarReader({
    entry: (entry) => entries.push({ ...entry, data: Buffer.alloc(0) }),
    data: (bytes) => parts.push(Buffer.from(bytes)),
    end: () => {
      entries.at(-1)!.data = Buffer.concat(parts);
      parts = [];
    },
  });
  for (let at = 0; at < tar.length; at += chunk) {
    const status = reader.push(tar.subarray(at, at + chunk));
    if (status === "declined") return undefined;
    if (status === "end") return entries;
  }
  return undefined; // no end marker
}

describe("svc's own kinds of entry, read by its own reader (platform/artifacts/_own-tar.ts)", () => {
  const tree = (root: string) =>
    execFileSync("bash", ["-c", "find . -printf '%p %y %m %s\\n' | sort && find . -type f -exec sha256sum {} + | sort -k2"], { cwd: root }).toString();
  const unpackedAsGnuTar = async (file: string, name: string) => {
    const ours = join(dir, `${name}-ours`);
    await unpackArtifact(file, ours);
    const theirs = join(dir, `${name}-gnu`);
    mkdirSync(theirs);
    execFileSync("tar", ["xzf", file, "-C", theirs, "--no-same-owner"]);
    expect(tree(ours)).toBe(tree(theirs));
  };
  const packed = async (name: string, contents: Map<string, string | Buffer>) => {
    const src = join(dir, `${name}-src`);
    const files: TarFile[] = [...contents].map(([path, body]) => {
      mkdirSync(join(src, path, ".."), { recursive: true });
      writeFileSync(join(src, path), body);
      return { path, source: join(src, path), size: Buffer.byteLength(body) };
    });
    const file = join(dir, `${name}.tar.gz`);
    await writeTarGz(files, file);
    return file;
  };

  it("reads what svc's pack writes, pax paths included, the same entries in chunks of any size", async () => {
    const deep = `app/${"long-folder-name/".repeat(8)}module.py`; // past ustar's 100 + 155 bytes: a pax path
    const file = await packed(
      "small",
      new Map<string, string | Buffer>([
        ["svc_manifest.json", "{}"],
        ["app/a.py", "x = 1\n"],
        [deep, "y = 2\n"],
        ["empty.txt", ""],
        ["site-packages/blob.bin", Buffer.alloc(70_000, 7)], // spans 64 KB chunks
      ]),
    );
    const tar = gunzipSync(readFileSync(file));
    const whole = readOwn(tar);
    expect(whole?.map((e) => e.path)).toEqual(expect.arrayContaining([deep, "empty.txt", "site-packages/blob.bin"]));
    expect(whole?.find((e) => e.path === "site-packages/blob.bin")?.data.equals(Buffer.alloc(70_000, 7))).toBe(true);
    for (const chunk of [1, 7, 512, 513, 65_536]) expect(readOwn(tar, chunk), `chunks of ${chunk}`).toEqual(whole);
    await unpackedAsGnuTar(file, "small");
  });

  it("unpacks a streamed artifact (past the 1 MB read at once) the same as GNU tar, and checks it", async () => {
    const contents = new Map<string, string | Buffer>();
    for (let i = 0; i < 300; i++) contents.set(`site-packages/pkg${i % 7}/mod${i}.py`, `value = ${i}\n`.repeat(i));
    contents.set("site-packages/native.so", randomBytes(3 << 20)); // incompressible
    const file = await packed("streamed", contents);
    expect(readFileSync(file).length).toBeGreaterThan(1 << 20);
    const read = readOwn(gunzipSync(readFileSync(file)), 65_536);
    expect(read?.filter((e) => e.type === "File")).toHaveLength(301);
    expect(await checkArtifact(file)).toMatchObject({ entries: read?.length });
    await unpackedAsGnuTar(file, "streamed");
  });

  it("refuses a pax path that leaves the folder, the header's own name harmless", async () => {
    const record = (key: string, value: string) => {
      const body = ` ${key}=${value}\n`;
      let length = body.length + 1;
      while (`${length}${body}`.length !== length) length++;
      return `${length}${body}`;
    };
    const pax = record("path", "app/../../svc-evil-pax");
    const tar = gunzipSync(rawTar([{ name: "a.py", body: "x" }]));
    const payload = tar.subarray(0, 1024); // a.py's header and body
    const paxHeader = rawHeader({ name: "PaxHeader/a.py", type: "x" }, pax.length);
    const body = Buffer.concat([Buffer.from(pax), Buffer.alloc(512 - pax.length)]);
    const file = join(dir, "pax-escape.tar.gz");
    writeFileSync(file, gzipSync(Buffer.concat([paxHeader, body, payload, Buffer.alloc(1024)])));
    expect(readOwn(gunzipSync(readFileSync(file)))?.[0]?.path).toBe("app/../../svc-evil-pax");
    await expect(checkArtifact(file)).rejects.toMatchObject({ code: "ARTIFACT_UNSAFE" });
    const dest = join(dir, "out-pax-escape");
    await expect(unpackArtifact(file, dest)).rejects.toMatchObject({ code: "ARTIFACT_UNSAFE", message: expect.stringMatching(/'\.\.'/) });
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(join(dir, "svc-evil-pax"))).toBe(false);
  });

  it("refuses a '..' path after a megabyte of files in a streamed artifact, the files before it removed", async () => {
    const file = write("late-escape.tar.gz", [
      { name: "app/noise.txt", body: randomBytes(1_200_000).toString("base64") }, // past 1 MB compressed: streamed
      { name: "app/../../svc-late-escape.py", body: "x" },
    ]);
    expect(readFileSync(file).length).toBeGreaterThan(1 << 20);
    await expect(checkArtifact(file)).rejects.toMatchObject({ code: "ARTIFACT_UNSAFE" });
    const dest = join(dir, "out-late-escape");
    await expect(unpackArtifact(file, dest)).rejects.toMatchObject({ code: "ARTIFACT_UNSAFE", message: expect.stringMatching(/'\.\.'/) });
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(join(dir, "svc-late-escape.py"))).toBe(false);
    expect(readdirSync(dir).filter((name) => name.startsWith("out-late-escape"))).toEqual([]); // no temporary folder left
  });

  it("refuses a file over a folder in a streamed artifact as it refuses it in a small one, naming no path of the platform's", async () => {
    const entries: RawEntry[] = [
      { name: "app/", type: "5" },
      { name: "app/a.py", body: "x" },
      { name: "app", body: "a file where the folder is" },
    ];
    const small = write("file-over-folder.tar.gz", entries);
    const streamed = write("file-over-folder-streamed.tar.gz", [{ name: "noise.txt", body: randomBytes(1_200_000).toString("base64") }, ...entries]);
    expect(readFileSync(streamed).length).toBeGreaterThan(1 << 20);
    for (const [name, file] of [
      ["small", small],
      ["streamed", streamed],
    ]) {
      const failure = await unpackArtifact(file!, join(dir, `out-file-over-folder-${name}`)).catch((error: Error) => error);
      expect(failure, name).toMatchObject({ code: "ARTIFACT_UNSAFE", message: expect.stringContaining("could not unpack") });
      expect((failure as Error).message, name).not.toContain(dir);
    }
  });

  it("declines a link or a header whose checksum is wrong: node-tar reads that tar", () => {
    const link = gunzipSync(
      rawTar([
        { name: "a.py", body: "x" },
        { name: "l.py", type: "2", link: "a.py" },
      ]),
    );
    expect(readOwn(link)).toBeUndefined();
    const plain = gunzipSync(rawTar([{ name: "a.py", body: "x" }]));
    expect(readOwn(plain)).toHaveLength(1);
    plain[0] = plain[0]! ^ 1; // the name's first byte: the checksum no longer holds
    expect(readOwn(plain)).toBeUndefined();
  });

  it("a streamed artifact with a link after many files is unpacked by node-tar, whole, as GNU tar unpacks it", async () => {
    const entries: RawEntry[] = [];
    for (let i = 0; i < 200; i++) entries.push({ name: `app/m${i}.py`, body: `${i}`.repeat(9000) });
    entries.push({ name: "app/noise.txt", body: randomBytes(1_200_000).toString("base64") }); // past 1 MB compressed
    entries.push({ name: "app/link.py", type: "2", link: "m1.py" });
    const file = write("late-link.tar.gz", entries);
    expect(readFileSync(file).length).toBeGreaterThan(1 << 20);
    const dest = join(dir, "out-late-link");
    await unpackArtifact(file, dest);
    expect(readFileSync(join(dest, "app/link.py"), "utf8")).toBe("1".repeat(9000));
    expect(readFileSync(join(dest, "app/m199.py"), "utf8")).toBe("199".repeat(9000));
    const theirs = join(dir, "late-link-gnu");
    mkdirSync(theirs);
    execFileSync("tar", ["xzf", file, "-C", theirs, "--no-same-owner"]);
    expect(tree(dest)).toBe(tree(theirs));
  });
});
