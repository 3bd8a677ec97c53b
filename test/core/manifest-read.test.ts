/** readManifest (core's public API): a folder with no build is BUILD_MISSING, a manifest that breaks the schema MANIFEST_INVALID. */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MANIFEST_FILE, readManifest } from "../../core/manifest.ts";

const root = mkdtempSync(join(tmpdir(), "svc-manifest-read-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("readManifest", () => {
  it("BUILD_MISSING when the project has no .svc/ build, naming the project", async () => {
    const error = await readManifest(join(root, ".svc", MANIFEST_FILE)).catch((e) => e);
    expect(error.code).toBe("BUILD_MISSING");
    expect(error.message).toContain(root);
  });

  it("MANIFEST_INVALID for a manifest that breaks the schema", async () => {
    mkdirSync(join(root, ".svc"), { recursive: true });
    writeFileSync(join(root, ".svc", MANIFEST_FILE), JSON.stringify({ endpoints: 5 }));
    expect((await readManifest(join(root, ".svc", MANIFEST_FILE)).catch((e) => e)).code).toBe("MANIFEST_INVALID");
  });
});
