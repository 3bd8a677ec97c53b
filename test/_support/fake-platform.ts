/**
 * TEST DOUBLE — not the embedded platform. A tiny in-memory server on node:http that answers just
 * the operations core/client sends: GraphQL executed against the real contract
 * (platform/graphql/schema.graphql, so a query the schema does not allow fails here too), the
 * artifact PUT, the queue routes runsync/status-sync/status/run/cancel, and a load-balanced echo.
 * Knobs let a test make runsync answer non-final, drop status-sync, or count PUTs.
 */
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { buildSchema, graphql } from "graphql";

const schema = buildSchema(readFileSync(new URL("../../platform/graphql/schema.graphql", import.meta.url), "utf8"));

type Rec = Record<string, any>;

export interface FakePlatform {
  url: string;
  apiKey: string;
  state: {
    apps: Rec[];
    environments: Rec[];
    endpoints: Rec[];
    builds: Rec[];
    objects: Map<string, Buffer>;
    jobs: Map<string, Rec>;
  };
  /** Requests seen, `METHOD path` (GraphQL as `GQL <operationName>`). */
  log: string[];
  puts: Array<{ contentType?: string; sha256: string; size: number }>;
  queue: {
    /** Output of a job from its endpoint id and input. */
    handler: (endpointId: string, input: any) => unknown;
    /** How many status-sync/status polls a job stays non-final after runsync (0: runsync completes). */
    pendingPolls: number;
    /** false → GET status-sync answers 404 (a platform without that route). */
    statusSync: boolean;
  };
  close(): Promise<void>;
}

let counter = 0;
const id = (prefix: string) => `${prefix}_${(++counter).toString(36)}${randomBytes(3).toString("hex")}`;

export async function startFakePlatform(options: { apiKey?: string } = {}): Promise<FakePlatform> {
  const apiKey = options.apiKey ?? "test-key";
  const state: FakePlatform["state"] = { apps: [], environments: [], endpoints: [], builds: [], objects: new Map(), jobs: new Map() };
  const pendingUploads = new Map<string, { sha256?: string; appId: string }>();
  const fake = {
    url: "",
    apiKey,
    state,
    log: [] as string[],
    puts: [] as FakePlatform["puts"],
    queue: { handler: (_id: string, input: any) => ({ echo: input }), pendingPolls: 0, statusSync: true },
  } as FakePlatform;

  const endpointView = (e: Rec) => ({ ...e, url: `${fake.url}/${e.type === "LB" ? "lb" : "v2"}/${e.id}` });
  const envView = (env: Rec) => ({ ...env, endpoints: state.endpoints.filter((e) => e.environmentId === env.id).map(endpointView) });
  const appView = (app: Rec) => ({
    ...app,
    environments: state.environments.filter((env) => env.appId === app.id).map(envView),
    builds: state.builds.filter((b) => b.appId === app.id),
  });
  const fail = (message: string): never => {
    throw new Error(message);
  };

  const root = {
    myself: () => ({ endpoints: state.endpoints.map(endpointView), apps: state.apps.map(appView) }),
    endpoint: ({ id }: Rec) => (state.endpoints.find((e) => e.id === id) ? endpointView(state.endpoints.find((e) => e.id === id)!) : null),
    apps: () => state.apps.map(appView),
    app: ({ name }: Rec) => (state.apps.find((a) => a.name === name) ? appView(state.apps.find((a) => a.name === name)!) : null),
    environment: ({ appId, name }: Rec) => {
      const env = state.environments.find((e) => e.appId === appId && e.name === name);
      return env ? envView(env) : null;
    },
    getBuild: ({ id }: Rec) => state.builds.find((b) => b.id === id) ?? null,
    workerLogs: () => ["log line"],
    createApp: ({ name }: Rec) => {
      if (state.apps.some((a) => a.name === name)) fail(`app "${name}" already exists`);
      const app = { id: id("app"), name, createdAt: new Date().toISOString() };
      state.apps.push(app);
      return appView(app);
    },
    deleteApp: ({ id }: Rec) => {
      state.apps = state.apps.filter((a) => a.id !== id);
      return true;
    },
    createEnvironment: ({ appId, name }: Rec) => {
      if (!state.apps.some((a) => a.id === appId)) fail(`no app ${appId}`);
      if (state.environments.some((e) => e.appId === appId && e.name === name)) fail(`environment "${name}" already exists`);
      const env = { id: id("env"), appId, name, activeBuildId: null };
      state.environments.push(env);
      return envView(env);
    },
    deleteEnvironment: ({ id }: Rec) => {
      state.environments = state.environments.filter((e) => e.id !== id);
      return true;
    },
    saveEndpoint: ({ input }: Rec) => {
      const defaults = {
        type: "QB",
        gpuIds: null,
        gpuCount: null,
        instanceIds: null,
        idleTimeout: 5,
        scalerType: "QUEUE_DELAY",
        scalerValue: 4,
        workersMin: 0,
        workersMax: 3,
        executionTimeoutMs: 600000,
        templateId: null,
        env: [],
        environmentId: null,
        buildId: null,
        locations: null,
        networkVolumeId: null,
      };
      const { template, ...fields } = input;
      if (input.id) {
        const existing = state.endpoints.find((e) => e.id === input.id) ?? fail(`endpoint ${input.id} not found`);
        Object.assign(existing, fields, template ? { imageName: template.imageName } : {});
        return endpointView(existing);
      }
      const endpoint = { ...defaults, ...fields, imageName: template?.imageName ?? null, id: id("ep"), createdAt: new Date().toISOString() };
      state.endpoints.push(endpoint);
      return endpointView(endpoint);
    },
    deleteEndpoint: ({ id }: Rec) => {
      if (!state.endpoints.some((e) => e.id === id)) fail(`endpoint ${id} not found`);
      state.endpoints = state.endpoints.filter((e) => e.id !== id);
      return true;
    },
    saveTemplate: () => fail("not in the test double"),
    prepareArtifactUpload: ({ appId, sha256 }: Rec) => {
      const hex = String(sha256 ?? "").replace(/^sha256:/, "");
      if (hex && state.objects.has(hex))
        return { uploadUrl: "", objectKey: hex, expiresAt: new Date(Date.now() + 3600e3).toISOString(), alreadyUploaded: true };
      const key = id("obj");
      pendingUploads.set(key, { sha256: hex || undefined, appId });
      return { uploadUrl: `${fake.url}/_upload/${key}`, objectKey: key, expiresAt: new Date(Date.now() + 3600e3).toISOString(), alreadyUploaded: false };
    },
    finalizeArtifactUpload: ({ objectKey, manifest }: Rec) => {
      const hex = state.objects.has(objectKey) ? objectKey : (fail(`object ${objectKey} was not uploaded`) as never);
      const build = { id: id("bld"), appId: "", sha256: hex, size: state.objects.get(hex)!.length, manifest, createdAt: new Date().toISOString() };
      state.builds.push(build);
      return build;
    },
    deployBuildToEnvironment: ({ environmentId, buildId }: Rec) => {
      const env = state.environments.find((e) => e.id === environmentId) ?? fail(`no environment ${environmentId}`);
      if (!state.builds.some((b) => b.id === buildId)) fail(`no build ${buildId}`);
      env.activeBuildId = buildId;
      return envView(env);
    },
    setBuildEndpointUrls: ({ buildId, urls }: Rec) => {
      const build = state.builds.find((b) => b.id === buildId) ?? fail(`no build ${buildId}`);
      build.manifest = { ...build.manifest, urls };
      return build;
    },
  };

  const body = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
  const send = (res: ServerResponse, status: number, value?: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(value === undefined ? "" : JSON.stringify(value));
  };

  const poll = (job: Rec) => {
    if (job.status === "COMPLETED" || job.status === "CANCELLED") return job;
    if (job.polls-- > 0) {
      job.status = "IN_PROGRESS";
      return { id: job.id, status: job.status };
    }
    job.status = "COMPLETED";
    return job;
  };
  const publicJob = (job: Rec) => {
    const { polls: _polls, endpointId: _e, ...rest } = job;
    return rest;
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", fake.url);
    const auth = req.headers.authorization?.replace(/^Bearer\s+/i, "");
    if (auth !== apiKey) {
      fake.log.push(`401 ${req.method} ${url.pathname}`);
      return send(res, 401, { error: "Missing or invalid API key." });
    }
    if (url.pathname === "/graphql" && req.method === "POST") {
      const payload = JSON.parse((await body(req)).toString());
      fake.log.push(`GQL ${payload.operationName ?? "?"}`);
      const result = await graphql({ schema, source: payload.query, variableValues: payload.variables, rootValue: root });
      return send(res, 200, result);
    }
    fake.log.push(`${req.method} ${url.pathname}`);
    let m = /^\/_upload\/([^/]+)$/.exec(url.pathname);
    if (m && req.method === "PUT") {
      const bytes = await body(req);
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      const pending = pendingUploads.get(m[1]!);
      if (!pending) return send(res, 404, { error: "unknown upload" });
      if (pending.sha256 && pending.sha256 !== sha256) return send(res, 400, { error: "sha256 mismatch" });
      fake.puts.push({ contentType: req.headers["content-type"], sha256, size: bytes.length });
      state.objects.set(sha256, bytes);
      state.objects.set(m[1]!, bytes); // finalize by object key
      return send(res, 200, { ok: true });
    }
    m = /^\/v2\/([^/]+)\/(runsync|run|status|status-sync|cancel)(?:\/([^/]+))?$/.exec(url.pathname);
    if (m) {
      const [, endpointId, route, jobId] = m as unknown as [string, string, string, string | undefined];
      if (!state.endpoints.some((e) => e.id === endpointId)) return send(res, 404, { error: "endpoint not found" });
      if (route === "run" || route === "runsync") {
        const { input } = JSON.parse((await body(req)).toString());
        const job: Rec = { id: randomBytes(8).toString("hex"), status: "IN_QUEUE", endpointId, polls: fake.queue.pendingPolls };
        job.output = fake.queue.handler(endpointId, input);
        state.jobs.set(job.id, job);
        if (route === "run") return send(res, 200, { id: job.id, status: "IN_QUEUE" });
        if (job.polls > 0) return send(res, 200, { id: job.id, status: "IN_QUEUE" });
        job.status = "COMPLETED";
        return send(res, 200, publicJob(job));
      }
      const job = jobId ? state.jobs.get(jobId) : undefined;
      if (route === "status-sync" && !fake.queue.statusSync) return send(res, 404, { error: "no such route" });
      if (!job) return send(res, 404, { error: "job not found" });
      if (route === "cancel") {
        job.status = "CANCELLED";
        return send(res, 200, { id: job.id, status: "CANCELLED" });
      }
      return send(res, 200, publicJob(poll(job)));
    }
    m = /^\/lb\/([^/]+)(\/.*)$/.exec(url.pathname);
    if (m) {
      const raw = (await body(req)).toString();
      return send(res, 200, { method: req.method, path: m[2], body: raw ? JSON.parse(raw) : null });
    }
    return send(res, 404, { error: "not found" });
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error) => send(res, 500, { error: String(error?.stack ?? error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return fake;
}
