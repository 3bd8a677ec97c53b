/**
 * A client that disconnects in the middle of an artifact upload: the platform logs one quiet line
 * (no "internal error", no stack), removes the partial file, and the same upload can be sent again.
 * Real platform on loopback, a raw HTTP client that goes away.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "node:http";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { buildFixtureArtifact, gqlOk, startTestPlatform, waitFor, type TestPlatform } from "./_support.ts";

let p: TestPlatform;
beforeAll(async () => {
  p = await startTestPlatform();
}, 30_000);
afterAll(async () => p?.dispose());

const partials = () => readdirSync(join(p.dataDir, "artifacts")).filter((name) => name.endsWith(".part"));

describe("an upload the client abandons", () => {
  it("logs one line, leaves no partial file, and the upload can be sent again", async () => {
    const artifact = await buildFixtureArtifact();
    const bytes = readFileSync(artifact.path);
    const { createApp } = await gqlOk<{ createApp: { id: string } }>(p, 'mutation { createApp(name: "aborts") { id } }');
    const { prepareArtifactUpload: prep } = await gqlOk<{ prepareArtifactUpload: { uploadUrl: string } }>(
      p,
      "mutation($a: String!, $s: Int!) { prepareArtifactUpload(appId: $a, size: $s) { uploadUrl } }",
      { a: createApp.id, s: bytes.length },
    );

    const req = request(prep.uploadUrl, { method: "PUT", headers: { "content-type": "application/gzip", "content-length": String(bytes.length) } });
    req.on("error", () => undefined); // we destroy it
    req.write(bytes.subarray(0, Math.floor(bytes.length / 2)));
    await waitFor("the partial upload on disk", () => partials().some((name) => statSync(join(p.dataDir, "artifacts", name)).size > 0), 10_000, 20);
    req.destroy();

    const line = await waitFor("the platform's line about it", () => p.logs.find((l) => l.includes("client disconnected")), 10_000, 20);
    expect(line).toMatch(/^upload [^:]+: the client disconnected after \d+ bytes; the partial upload was removed$/);
    expect(p.logs.filter((l) => l.includes("internal error") || l.includes("    at "))).toEqual([]);
    await waitFor("the partial file to go", () => partials().length === 0, 10_000, 20);

    const again = await fetch(prep.uploadUrl, { method: "PUT", headers: { "content-type": "application/gzip" }, body: new Uint8Array(bytes) });
    expect(again.status).toBe(200);
    expect(partials()).toEqual([]);
  }, 30_000);
});
