/**
 * An environment switches builds in one committed step (docs/deploy.md, "One switch"): settings
 * saved for a build that is not the active one are staged, `deployBuildToEnvironment` applies them,
 * retires the endpoints the build lacks and drops what else was staged, all at once. A real
 * platform in this process; the deploy tool's own client.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient, type PlatformClient } from "../../core/client/index.ts";
import { buildFixtureArtifact, startTestPlatform, uploadArtifact, type BuiltArtifact, type TestPlatform } from "./_support.ts";

/** The fixture's manifest without `name` (a build that no longer has that endpoint). */
function without(artifact: BuiltArtifact, name: string): BuiltArtifact {
  const manifest = structuredClone(artifact.manifest) as { endpoints: Record<string, unknown>; functions: Record<string, string> };
  delete manifest.endpoints[name];
  for (const [fn, endpoint] of Object.entries(manifest.functions)) if (endpoint === name) delete manifest.functions[fn];
  return { ...artifact, manifest };
}

describe("deployBuildToEnvironment: one committed step", () => {
  let p: TestPlatform;
  let client: PlatformClient;
  let artifact: BuiltArtifact;

  beforeAll(async () => {
    p = await startTestPlatform();
    client = createPlatformClient(p);
    artifact = await buildFixtureArtifact();
  });
  afterAll(async () => {
    await p?.dispose();
  });

  it("stages settings for a build until the switch, then applies them, retires what the build lacks and drops the rest", async () => {
    const first = await uploadArtifact(p, artifact, "switch-app");
    const env = await client.createEnvironment(first.appId, "production");
    const input = (name: string, buildId: string, workersMax = 1) => ({
      name,
      type: "QB" as const,
      template: { imageName: "svc/worker-cpu:py3.11" },
      instanceIds: ["cpu3c-2-4"],
      workersMax,
      environmentId: env.id,
      buildId,
    });
    const staged = await client.saveEndpoint(input("work", first.buildId));
    expect(staged.buildId).toBe(first.buildId);
    const awork = await client.saveEndpoint(input("awork", first.buildId));
    // Nothing is live before the switch: no endpoint to call, no worker.
    expect((await client.getEnvironment(first.appId, "production"))!.endpoints).toEqual([]);
    expect((await client.runsync(staged.id, {}).catch((error: Error) => error)) as Error).toMatchObject({ code: "NOT_FOUND" });

    const switched = await client.deployBuildToEnvironment(env.id, first.buildId);
    expect(switched.activeBuildId).toBe(first.buildId);
    expect(switched.endpoints.map((e) => [e.name, e.id, e.buildId]).sort()).toEqual([
      ["awork", awork.id, first.buildId],
      ["work", staged.id, first.buildId],
    ]);

    // The next build: new settings for `work`, a new endpoint `count`, and no `awork` in its manifest.
    const second = await uploadArtifact(p, without(artifact, "awork"), "switch-app");
    await client.saveEndpoint({ ...input("work", second.buildId, 2), id: staged.id });
    const count = await client.saveEndpoint(input("count", second.buildId));
    // A third build staged and never switched to: its settings must not survive the second's switch.
    const third = await uploadArtifact(p, artifact, "switch-app");
    await client.saveEndpoint({ ...input("work", third.buildId, 3), id: staged.id });
    await client.saveEndpoint({ ...input("work", second.buildId, 2), id: staged.id }); // the second deploy's own, saved last
    const before = (await client.getEnvironment(first.appId, "production"))!;
    expect(before.activeBuildId).toBe(first.buildId);
    expect(before.endpoints.map((e) => [e.name, e.workersMax, e.buildId]).sort()).toEqual([
      ["awork", 1, first.buildId],
      ["work", 1, first.buildId],
    ]);

    const after = await client.deployBuildToEnvironment(env.id, second.buildId);
    expect(after.endpoints.map((e) => [e.name, e.id, e.workersMax, e.buildId]).sort()).toEqual([
      ["count", count.id, 1, second.buildId],
      ["work", staged.id, 2, second.buildId],
    ]);
    expect(p.context.store.endpoints.get(awork.id)).toBeUndefined();
    expect(p.context.store.db.prepare("SELECT COUNT(*) AS n FROM staged_endpoints").get()).toEqual({ n: 0 });

    // Switching to the third build now applies nothing staged for it (dropped) and keeps the settings.
    const third2 = await client.deployBuildToEnvironment(env.id, third.buildId);
    expect(third2.endpoints.find((e) => e.name === "work")!.workersMax).toBe(2);
  });

  it("refuses settings for a build of another app", async () => {
    const mine = await uploadArtifact(p, artifact, "app-one");
    const other = await uploadArtifact(p, artifact, "app-two");
    const env = await client.createEnvironment(mine.appId, "production");
    const error = (await client
      .saveEndpoint({ name: "work", template: { imageName: "svc/worker-cpu:py3.11" }, environmentId: env.id, buildId: other.buildId })
      .catch((e: Error) => e)) as Error;
    expect(error.message).toMatch(/belongs to another app/);
  });
});
