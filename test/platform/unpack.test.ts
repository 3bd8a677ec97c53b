/** Safe unpacking: absolute paths, '..', escaping links, devices and writes through links are refused. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { checkArtifact, unpackArtifact } from "../../platform/workers/unpack.ts";
import { tempDir } from "./_support.ts";
import { rawTar, type RawEntry } from "./_raw-tar.ts";

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

  const unsafe: Array<[string, RawEntry[], RegExp]> = [
    ["an absolute path", [{ name: "/tmp/svc-evil-abs", body: "x" }], /absolute path/],
    ["'..' in a path", [{ name: "app/../../evil", body: "x" }], /'\.\.'/],
    ["a symlink to an absolute path", [{ name: "etc", type: "2", link: "/etc" }], /absolute path/],
    ["a symlink escaping with ..", [{ name: "app/", type: "5" }, { name: "app/up", type: "2", link: "../../outside" }], /escapes the folder/],
    ["a write through a symlink", [{ name: "l", type: "2", link: "." }, { name: "l/x", body: "x" }], /through or replaces a link/],
    ["a chain of links that escapes", [{ name: "x/", type: "5" }, { name: "x/l", type: "2", link: ".." }, { name: "y", type: "2", link: "x/l/.." }], /through another link|escapes/],
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

