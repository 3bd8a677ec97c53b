/**
 * Named keys, roles and scopes on a real platform over HTTP (docs/platform.md, "Keys and roles"):
 * every registered route and every GraphQL field has a rule in platform/keys/rules.ts (the test
 * enumerates h3's routes and the schema, so a new route without a rule fails here); each role is
 * tried against each route and each field, table-driven from that one table; a key scoped to app A
 * is refused on app B; a revoked key is refused at once; no secret is kept in the state folder; the
 * audit log records each management action once.
 */
import { execFileSync } from "node:child_process";
import { open, readdir, readFile, stat } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import {
  buildSchema,
  getNamedType,
  type GraphQLInputObjectType,
  GraphQLNonNull,
  GraphQLObjectType,
  isInputObjectType,
  isNonNullType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLInputType,
} from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApi } from "../../platform/api/app.ts";
import { GRAPHQL_RULES, ROLES, ROUTE_RULES, type Role, type Rule } from "../../platform/keys/rules.ts";
import { TimeSeries } from "../../platform/console/timeseries.ts";
import { buildFixtureArtifact, gqlOk, runtimeCompileDone, startTestPlatform, uploadArtifact, type BuiltArtifact, type TestPlatform } from "./_support.ts";

/** Where a file holds data, as Python's lseek SEEK_DATA / SEEK_HOLE see it: [start, end) pairs. */
const DATA_RANGES = `
import json, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size, pos, ranges = os.fstat(fd).st_size, 0, []
while pos < size:
    try:
        start = os.lseek(fd, pos, os.SEEK_DATA)
    except OSError:  # ENXIO: only a hole is left
        break
    pos = os.lseek(fd, start, os.SEEK_HOLE)
    ranges.append([start, pos])
print(json.dumps(ranges))
`;

/**
 * A file's bytes, as the runs of data its holes leave: a volume's disk image (1 GB, sparse) read
 * whole was ~10 s of the test's system time for zeros, which cannot hold a secret. Each run whole
 * (a run has no hole inside, so no secret is split across two).
 */
async function dataOf(file: string): Promise<Buffer[]> {
  if ((await stat(file)).size < 64 << 20) return [await readFile(file)];
  const ranges = JSON.parse(execFileSync("python3", ["-c", DATA_RANGES, file], { encoding: "utf8" })) as Array<[number, number]>;
  const handle = await open(file, "r");
  try {
    return await Promise.all(
      ranges.map(async ([start, end]) => {
        const bytes = Buffer.alloc(end - start);
        await handle.read(bytes, 0, bytes.length, start);
        return bytes;
      }),
    );
  } finally {
    await handle.close();
  }
}

const SCHEMA = buildSchema(await readFile(new URL("../../platform/graphql/schema.graphql", import.meta.url), "utf8"));

interface Deployed {
  appId: string;
  envId: string;
  buildId: string;
  endpointId: string;
}

/** Uploads the fixture as `app`, and deploys its `work` endpoint into environment `env` through the switch. */
async function deployTo(p: TestPlatform, artifact: BuiltArtifact, app: string, env: string): Promise<Deployed> {
  const { appId, buildId } = await uploadArtifact(p, artifact, app);
  const { createEnvironment } = await gqlOk(p, "mutation($a: String!, $n: String!) { createEnvironment(appId: $a, name: $n) { id } }", { a: appId, n: env });
  const { saveEndpoint } = await gqlOk(p, "mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }", {
    i: {
      name: "work",
      instanceIds: ["cpu3c-2-4"],
      template: { imageName: "svc/worker-cpu:py3.11" },
      workersMin: 0,
      workersMax: 0,
      buildId,
      environmentId: createEnvironment.id,
    },
  });
  await gqlOk(p, "mutation($e: String!, $b: String!) { deployBuildToEnvironment(environmentId: $e, buildId: $b) { id } }", {
    e: createEnvironment.id,
    b: buildId,
  });
  return { appId, envId: createEnvironment.id, buildId, endpointId: saveEndpoint.id };
}

async function createKey(p: TestPlatform, name: string, role: Role, app?: string, env?: string): Promise<string> {
  const { apiKeyCreate } = await gqlOk(p, "mutation($i: ApiKeyCreateInput!) { apiKeyCreate(input: $i) { secret } }", { i: { name, role, app, env } });
  return apiKeyCreate.secret as string;
}

const call = async (p: TestPlatform, key: string, method: string, path: string, body?: string) => {
  const res = await fetch(`${p.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
  const text = await res.text();
  return { status: res.status, text };
};

/** A request with headers fetch will not send (Host, Upgrade); 101 when it upgraded (a shell opened, closed again at once). */
const rawCall = (p: TestPlatform, key: string, path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(`${p.url}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } });
    req.on("upgrade", (_res, socket) => {
      socket.destroy();
      resolve({ status: 101, text: "" });
    });
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end();
  });

/** A value of the argument's type that passes validation (its required fields, recursively). */
function dummy(type: GraphQLInputType): unknown {
  const named = getNamedType(type);
  if (isInputObjectType(named)) {
    const fields = Object.values((named as GraphQLInputObjectType).getFields()).filter((f) => isNonNullType(f.type));
    return Object.fromEntries(fields.map((f) => [f.name, dummy(f.type)]));
  }
  if (isScalarType(named)) return named.name === "Int" ? 1 : named.name === "Boolean" ? false : named.name === "JSON" ? "{}" : "x";
  return "x";
}

/** `query { field(arg: $arg…) { __typename } }` with dummy variables for its required arguments. */
function fieldCall(operation: "query" | "mutation", name: string, args: readonly GraphQLArgument[]) {
  const required = args.filter((a) => a.type instanceof GraphQLNonNull);
  const defs = required.map((a) => `$${a.name}: ${a.type.toString()}`).join(", ");
  const pass = required.map((a) => `${a.name}: $${a.name}`).join(", ");
  const field = operation === "query" ? SCHEMA.getQueryType()!.getFields()[name]! : SCHEMA.getMutationType()!.getFields()[name]!;
  const selection = getNamedType(field.type) instanceof GraphQLObjectType ? " { __typename }" : "";
  const query = `${operation}${defs ? `(${defs})` : ""} { ${name}${pass ? `(${pass})` : ""}${selection} }`;
  return { query, variables: Object.fromEntries(required.map((a) => [a.name, dummy(a.type)])) };
}

describe("keys, roles and scopes (real platform over HTTP)", () => {
  let p: TestPlatform;
  let a: Deployed;
  let b: Deployed;
  /** Platform-wide keys, one per role; and keys of each role scoped to app A. */
  const wide: Partial<Record<Role, string>> = {};
  const scopedA: Partial<Record<Role, string>> = {};

  beforeAll(async () => {
    p = await startTestPlatform({ rateLimits: false });
    const artifact = await buildFixtureArtifact();
    a = await deployTo(p, artifact, "app-a", "production");
    b = await deployTo(p, artifact, "app-b", "production");
    for (const role of ROLES) wide[role] = await createKey(p, `wide-${role}`, role);
    for (const role of ROLES.filter((r) => r !== "admin")) scopedA[role] = await createKey(p, `a-${role}`, role, "app-a");
  }, 120_000);
  afterAll(async () => p?.dispose());

  it("every registered route and every GraphQL field has a rule (a new one without a rule fails here)", () => {
    const api = createApi(p.context, new TimeSeries(), { endpointRemoved: async () => undefined, endpointChanged: () => undefined });
    const routes = (api.app as unknown as { "~routes": Array<{ method?: string; route: string }> })["~routes"].map((r) => `${r.method || "*"} ${r.route}`);
    expect(routes.length).toBeGreaterThan(20);
    // the hot path's runsync and jobs-done, and the shell's upgrade, are served outside h3
    const all = [...routes, "POST /v2/:endpoint/runsync", "POST /v2/_worker/:worker/jobs-done", "GET /v2/:endpoint/shell"];
    expect(all.filter((route) => !ROUTE_RULES[route])).toEqual([]);
    const fields = [
      ...Object.keys(SCHEMA.getQueryType()!.getFields()).map((f) => `Query.${f}`),
      ...Object.keys(SCHEMA.getMutationType()!.getFields()).map((f) => `Mutation.${f}`),
    ];
    expect(fields.filter((field) => !GRAPHQL_RULES[field])).toEqual([]);
    expect(Object.keys(GRAPHQL_RULES).filter((field) => !fields.includes(field))).toEqual([]); // no stale rows
  });

  it("docs/platform.md has the same table, row for row", async () => {
    const docs = await readFile(new URL("../../docs/platform.md", import.meta.url), "utf8");
    const row = (name: string, r: Rule) =>
      `| \`${name}\` | ${typeof r.roles === "string" ? r.roles : r.roles.join(", ")} | ${r.on}${r.arg ? ` (\`${r.arg}\`)` : ""} |`;
    const rows = [...Object.entries(ROUTE_RULES), ...Object.entries(GRAPHQL_RULES)].map(([name, rule]) => row(name, rule));
    expect(rows.filter((line) => !docs.includes(line))).toEqual([]);
  });

  it("each role against each route: allowed where the table says, else 403 KEY_FORBIDDEN", { timeout: 120_000 }, async () => {
    const job = "00000000-0000-7000-8000-000000000000";
    const checked: string[] = [];
    for (const [route, rule] of Object.entries(ROUTE_RULES)) {
      const [method, pattern] = route.split(" ") as [string, string];
      if (rule.roles === "self" || rule.roles === "none") continue; // own tokens, or no key
      if (!pattern.startsWith("/")) {
        // the load balancer by host: <endpoint>.localhost
        for (const role of ROLES) {
          const res = await rawCall(p, wide[role]!, "/anything", { host: `${a.endpointId}.localhost` });
          expect([res.status, route, role], res.text).toEqual([rule.roles.includes(role) ? expect.not.toBeOneOf([401, 403]) : 403, route, role]);
        }
        checked.push(route);
        continue;
      }
      const path = pattern.replace(":endpoint", a.endpointId).replace(":job", job).replace(":id", "f_none").replace(":name", "x").replace("**", "anything");
      for (const role of ROLES) {
        const res = path.endsWith("/shell")
          ? await rawCall(p, wide[role]!, path, { connection: "Upgrade", upgrade: "svc-shell" })
          : await call(p, wide[role]!, method === "*" ? "GET" : method, path, method === "POST" ? "{}" : undefined);
        const allowed = rule.roles.includes(role);
        expect([res.status, route, role], res.text).toEqual([allowed ? expect.not.toBeOneOf([401, 403]) : 403, route, role]);
        if (!allowed) expect(JSON.parse(res.text).code).toBe("KEY_FORBIDDEN");
      }
      checked.push(route);
    }
    expect(checked.length).toBeGreaterThan(15);
  });

  it("each role against each GraphQL field, table-driven", { timeout: 120_000 }, async () => {
    for (const [field, rule] of Object.entries(GRAPHQL_RULES)) {
      const [type, name] = field.split(".") as [string, string];
      const definition = (type === "Query" ? SCHEMA.getQueryType()! : SCHEMA.getMutationType()!).getFields()[name]!;
      const { query, variables } = fieldCall(type === "Query" ? "query" : "mutation", name, definition.args);
      for (const role of ROLES) {
        if (role === "admin" && /^Mutation\.(deleteApp|apiKeyRevoke)$/.test(field)) continue; // "x" matches nothing, but keep the admin path short
        const res = await call(p, wide[role]!, "POST", "/graphql", JSON.stringify({ query, variables }));
        const body = JSON.parse(res.text) as { errors?: Array<{ extensions?: { code?: string } }> };
        const allowed = (rule.roles as readonly string[]).includes(role);
        const refused = res.status === 403 && body.errors?.[0]?.extensions?.code === "KEY_FORBIDDEN";
        expect([field, role, refused], res.text).toEqual([field, role, !allowed]);
      }
    }
  });

  it("a key scoped to app A reaches A's endpoints and is refused (403) on app B's, and on deploying", async () => {
    const invoke = scopedA.invoke!;
    expect((await call(p, invoke, "POST", `/v2/${a.endpointId}/run`, '{"input": {}}')).status).toBe(200);
    const onB = await call(p, invoke, "POST", `/v2/${b.endpointId}/run`, '{"input": {}}');
    expect(onB.status).toBe(403);
    expect(JSON.parse(onB.text).code).toBe("KEY_FORBIDDEN");
    // the hot path's runsync by the same table
    expect((await call(p, invoke, "POST", `/v2/${b.endpointId}/runsync`, '{"input": {}}')).status).toBe(403);
    // the deploy's switch: an invoke key may not; a deploy key of A may on A, not on B
    const deployOf = (env: string, build: string) =>
      JSON.stringify({
        query: "mutation($e: String!, $b: String!) { deployBuildToEnvironment(environmentId: $e, buildId: $b) { id } }",
        variables: { e: env, b: build },
      });
    expect((await call(p, invoke, "POST", "/graphql", deployOf(a.envId, a.buildId))).status).toBe(403);
    expect((await call(p, scopedA.deploy!, "POST", "/graphql", deployOf(a.envId, a.buildId))).status).toBe(200);
    expect((await call(p, scopedA.deploy!, "POST", "/graphql", deployOf(b.envId, b.buildId))).status).toBe(403);
    // lists answer only what the scope reaches
    const apps = await call(p, scopedA.read!, "POST", "/graphql", JSON.stringify({ query: "{ apps { name } myself { endpoints { id } } }" }));
    expect(JSON.parse(apps.text).data).toEqual({ apps: [{ name: "app-a" }], myself: { endpoints: [{ id: a.endpointId }] } });
  });

  it("a revoked key is refused at its next request", async () => {
    const key = await createKey(p, "short-lived", "read");
    expect((await call(p, key, "GET", `/v2/${a.endpointId}/health`)).status).toBe(200);
    await gqlOk(p, 'mutation { apiKeyRevoke(name: "short-lived") }');
    const revokedAt = Date.now();
    const after = await call(p, key, "GET", `/v2/${a.endpointId}/health`);
    expect(after.status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(1000);
  });

  it("keeps no key's secret in the state folder: not in the SQLite files, not anywhere under it", async () => {
    const secrets = [...Object.values(wide), ...Object.values(scopedA)] as string[];
    p.context.store.db.pragma("wal_checkpoint(TRUNCATE)");
    await runtimeCompileDone(p.dataDir);
    const files = (await readdir(p.dataDir, { recursive: true, withFileTypes: true })).filter((f) => f.isFile()).map((f) => join(f.parentPath, f.name));
    expect(files.some((f) => f.endsWith(".db") || f.endsWith(".sqlite"))).toBe(true);
    // the secret, and its random part alone (the id before it is not secret)
    const parts = secrets.flatMap((secret) => [secret, secret.slice(18)]);
    for (const file of files) {
      for (const bytes of await dataOf(file)) for (const part of parts) expect(bytes.includes(part), `${file} holds a secret`).toBe(false);
    }
  });
});

describe("the audit log (real platform over HTTP)", () => {
  let p: TestPlatform;
  afterAll(async () => p?.dispose());

  it("records each management action once, with its key's name, app and outcome", { timeout: 120_000 }, async () => {
    p = await startTestPlatform({ rateLimits: false });
    const artifact = await buildFixtureArtifact();
    const deployer = await createKey(p, "ci", "deploy", "app-a");
    const a = await deployTo(p, artifact, "app-a", "production");
    const asCi = { url: p.url, apiKey: deployer };
    await gqlOk(asCi, "mutation($e: String!, $b: String!) { deployBuildToEnvironment(environmentId: $e, buildId: $b) { id } }", { e: a.envId, b: a.buildId });
    await gqlOk(asCi, "mutation($e: String!) { rollbackEnvironment(environmentId: $e, buildId: null) { to } }", { e: a.envId }).catch(() => undefined); // same build only: refused
    await gqlOk(asCi, "mutation($id: String!) { deleteEndpoint(id: $id) }", { id: a.endpointId });
    await gqlOk(p, 'mutation { secretCreate(input: {name: "s1", value: "v"}) { id } }');
    await gqlOk(p, 'mutation { secretDelete(name: "s1") }');
    const { createNetworkVolume } = await gqlOk(p, 'mutation { createNetworkVolume(input: {name: "vol1", size: 1}) { id } }');
    await gqlOk(p, "mutation($id: String!) { deleteNetworkVolume(input: {id: $id}) }", { id: createNetworkVolume.id });
    await gqlOk(p, 'mutation { apiKeyRevoke(name: "ci") }');
    const refused = await call(p, deployer, "POST", "/graphql", JSON.stringify({ query: 'mutation { secretDelete(name: "x") }' }));
    expect(refused.status).toBe(401); // revoked: not even a name to record
    const { auditLog } = await gqlOk(p, "{ auditLog { keyName action app target outcome } }");
    expect([...auditLog].reverse()).toEqual([
      { keyName: "platform", action: "key.create", app: null, target: "ci", outcome: "ok" },
      { keyName: "platform", action: "deploy", app: "app-a", target: `production ← ${a.buildId}`, outcome: "ok" },
      { keyName: "ci", action: "deploy", app: "app-a", target: `production ← ${a.buildId}`, outcome: "ok" },
      { keyName: "ci", action: "rollback", app: "app-a", target: "production", outcome: "BAD_REQUEST" },
      { keyName: "ci", action: "undeploy", app: "app-a", target: "work", outcome: "ok" },
      { keyName: "platform", action: "secret.create", app: null, target: "s1", outcome: "ok" },
      { keyName: "platform", action: "secret.delete", app: null, target: "s1", outcome: "ok" },
      { keyName: "platform", action: "volume.delete", app: null, target: "vol1", outcome: "ok" },
      { keyName: "platform", action: "key.revoke", app: null, target: "ci", outcome: "ok" },
    ]);
  });
});
