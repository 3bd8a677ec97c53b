/**
 * Deploy history's retention on a real platform (docs/platform.md, "History and rollback"): with
 * `historyRetention: 2`, the third deploy of an environment drops the first entry, and the first
 * build, which nothing refers to any more, is deleted with its unpacked folder; a build still kept
 * stays, and a rollback can only go back to a kept one.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildFixtureArtifact, gql, gqlOk, startTestPlatform, uploadArtifact, waitFor, type TestPlatform } from "./_support.ts";

describe("deploy history retention (real platform)", () => {
  let p: TestPlatform;
  afterAll(async () => p?.dispose());

  it("keeps the newest entries per environment and deletes the builds only they referred to", { timeout: 120_000 }, async () => {
    p = await startTestPlatform({ historyRetention: 2 });
    const artifact = await buildFixtureArtifact();
    const builds: string[] = [];
    let envId = "";
    for (let i = 0; i < 3; i++) {
      const { appId, buildId } = await uploadArtifact(p, artifact, "kept-app");
      if (!envId)
        envId = (await gqlOk(p, 'mutation($a: String!) { createEnvironment(appId: $a, name: "production") { id } }', { a: appId })).createEnvironment.id;
      await gqlOk(p, "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }", {
        i: {
          name: "work",
          instanceIds: ["cpu3c-2-4"],
          template: { imageName: "svc/worker-cpu:py3.11" },
          workersMin: 0,
          workersMax: 0,
          buildId,
          environmentId: envId,
        },
      });
      await gqlOk(p, "mutation($e: String!, $b: String!) { deployBuildToEnvironment(environmentId: $e, buildId: $b) { id } }", { e: envId, b: buildId });
      builds.push(buildId);
      // the folder a worker's start unpacks the build into (no worker runs here: workersMax 0)
      mkdirSync(join(p.dataDir, "builds", buildId, "app"), { recursive: true });
    }
    const { deployHistory } = await gqlOk(
      p,
      "query($e: String!) { deployHistory(environmentId: $e) { buildId kind keyName active changes { added changed removed } } }",
      {
        e: envId,
      },
    );
    expect(deployHistory.map((d: { buildId: string }) => d.buildId)).toEqual([builds[2], builds[1]]);
    expect(deployHistory[0]).toMatchObject({ kind: "deploy", keyName: "platform", active: true });
    expect(p.context.store.builds.get(builds[0]!)).toBeUndefined();
    await waitFor("the first build's folder to go", () => !existsSync(join(p.dataDir, "builds", builds[0]!)));
    expect(p.context.store.builds.get(builds[1]!)).toBeDefined();
    expect(existsSync(join(p.dataDir, "builds", builds[1]!))).toBe(true);

    // back to the kept build works; to the dropped one is NOT_FOUND
    const gone = await gql(p, "mutation($e: String!, $b: String) { rollbackEnvironment(environmentId: $e, buildId: $b) { to } }", { e: envId, b: builds[0] });
    expect(gone.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
    const back = await gqlOk(p, "mutation($e: String!) { rollbackEnvironment(environmentId: $e) { from to } }", { e: envId });
    expect(back.rollbackEnvironment).toEqual({ from: builds[2], to: builds[1] });
  });
});
