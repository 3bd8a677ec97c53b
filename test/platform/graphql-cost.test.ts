/**
 * GraphQL's cost limit (issue 27): a deployed function sends one request of 250,000 aliased
 * `getBuild` fields with its worker's scoped key (fixtures/resources/abuse, op "graphql"); it gets
 * 400 GRAPHQL_TOO_COSTLY at once, no 5xx, while another app's runsync and /health keep answering.
 * Fields (through a fragment bomb), depth, tokens and query size are refused the same way; a
 * query within the limits still answers.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPlatformClient } from "../../core/client/index.ts";
import { createLogger } from "../../core/logger.ts";
import { runDeploy } from "../../cli/commands/deploy.ts";
import { GRAPHQL_LIMITS } from "../../platform/graphql/cost-limit.ts";
import { api, gql, startTestPlatform, type TestPlatform } from "./_support.ts";
import { bystander } from "./_bystander.ts";

const FIXTURES = new URL("../../fixtures/", import.meta.url).pathname;

describe.runIf(process.platform === "linux")("GraphQL's cost limit", () => {
  let p: TestPlatform;
  let hog: string;
  let victim: string;
  const roots: string[] = [];

  const deployFixture = async (path: string) => {
    const root = await mkdtemp(join(tmpdir(), "svc-graphql-cost-"));
    roots.push(root);
    await cp(join(FIXTURES, path), root, { recursive: true });
    return (await runDeploy({ root, client: createPlatformClient(p), logger: createLogger("error", () => undefined) })).summary.endpoints;
  };

  beforeAll(async () => {
    p = await startTestPlatform({ rateLimits: false });
    victim = (await deployFixture("containment/victim")).find((e) => e.name === "vault")!.id;
    hog = (await deployFixture("resources/abuse")).find((e) => e.name === "hog")!.id;
    expect((await api(p, "POST", `/v2/${victim}/runsync`, { input: {} })).body.status).toBe("COMPLETED");
  }, 120_000);
  afterAll(async () => {
    await p?.dispose();
    for (const dir of roots) await rm(dir, { recursive: true, force: true });
  });

  it("refuses 250,000 aliased getBuild fields sent with a worker's scoped key: 400 in milliseconds, other clients unharmed", async () => {
    const other = bystander(p, victim);
    const r = await api(p, "POST", `/v2/${hog}/runsync`, { input: { op: "graphql", count: 250_000 } });
    const report = await other.stop();
    expect(r.body.status, JSON.stringify(r.body).slice(0, 500)).toBe("COMPLETED");
    const out = r.body.output;
    expect(out.status).toBe(400);
    expect(out.body.code).toBe("GRAPHQL_TOO_COSTLY");
    expect(out.body.errors[0].extensions.code).toBe("GRAPHQL_TOO_COSTLY");
    expect(out.body.error).toContain("query size limit");
    expect(out.ms).toBeLessThan(2000);
    expect(report.failures).toEqual([]);
    if (process.env.SVC_RESOURCE_FIGURES)
      process.stderr.write(
        `[figure] graphql: ${out.bytes} bytes, 250,000 aliases → ${out.status} ${out.body.code} in ${out.ms.toFixed(0)} ms; other app /health p99 ${report.healthP99Ms.toFixed(1)} ms (${report.healths} calls)\n`,
      );
    // within the query size but over the aliases: the same refusal, naming aliases
    const aliased = await api(p, "POST", `/v2/${hog}/runsync`, { input: { op: "graphql", count: GRAPHQL_LIMITS.aliases + 1 } });
    expect(aliased.body.output.status).toBe(400);
    expect(aliased.body.output.body.error).toContain("aliases limit");
    const fine = await api(p, "POST", `/v2/${hog}/runsync`, { input: { op: "graphql", count: 3 } });
    expect(fine.body.output.status).toBe(200);
    expect(Object.keys(fine.body.output.body.data)).toEqual(["b0", "b1", "b2"]);
  }, 60_000);

  it("counts fields through fragments, and refuses depth, tokens and size the same way", async () => {
    // each level doubles the fields: 2^20 `id`s from a few hundred bytes of query
    const levels = 20;
    const fragments = Array.from(
      { length: levels },
      (_, i) => `fragment F${i} on Query { ${i + 1 < levels ? `...F${i + 1} ...F${i + 1}` : "myself { id }"} }`,
    ).join("\n");
    const bomb = await gql(p, `query { ...F0 }\n${fragments}`);
    expect(bomb.status).toBe(400);
    expect(bomb.errors?.[0]?.extensions?.code).toBe("GRAPHQL_TOO_COSTLY");
    expect(bomb.errors?.[0]?.message).toContain("fields limit");

    const deep = await gql(p, `query { ${"myself { ".repeat(GRAPHQL_LIMITS.depth + 1)}id${" }".repeat(GRAPHQL_LIMITS.depth + 1)} }`);
    expect(deep.status).toBe(400);
    expect(deep.errors?.[0]?.message).toContain("depth limit");

    const tokens = await gql(p, `query { myself { ${"id ".repeat(GRAPHQL_LIMITS.tokens)} } }`);
    expect(tokens.status).toBe(400);
    expect(tokens.errors?.[0]?.message).toContain("tokens limit");

    const long = await gql(p, `query { myself { id } } # ${"x".repeat(GRAPHQL_LIMITS.queryBytes)}`);
    expect(long.status).toBe(400);
    expect(long.errors?.[0]?.message).toContain("query size limit");

    const ok = await gql(p, "query { myself { id } }");
    expect(ok.status).toBe(200);
  }, 30_000);
});
