/**
 * A module that cannot be imported, on the real embedded platform with real Python workers: the
 * endpoint's queued and new jobs FAIL at once with the error type, message, file:line and the
 * spec's remedy; load-balanced calls answer 503 with the same; /health and the worker logs say
 * why; a fixed redeploy recovers without a platform restart. A worker that exits before it is
 * ready backs off its restarts and, on the second exit in a row, fails the queued jobs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, startTestPlatform, uploadArtifact, waitFinal, waitFor, type TestPlatform } from "./_support.ts";
import { buildAppArtifact, saveImageEndpoint } from "./_app-artifact.ts";

const REMEDY = "Import packages inside the endpoint function body, not at file top.";
const BROKEN = `import json

import not_installed_pkg  # line 3

from svc import Endpoint

api = Endpoint(name="broken-api")


@Endpoint(name="broken")
def broken(value: int = 0) -> dict:
    return {"value": value}


@api.get("/hello")
def hello() -> dict:
    return {"hello": json.dumps("never")}
`;
const FIXED = BROKEN.replace("import not_installed_pkg  # line 3", "");
const ENDPOINTS = [
  { name: "broken", module: "app.main", functions: ["broken"] },
  { name: "broken-api", module: "app.main", functions: ["hello"], type: "LB" as const },
];

let p: TestPlatform;
beforeAll(async () => {
  p = await startTestPlatform({ lbReadyWaitMs: 10_000 });
});
afterAll(async () => {
  await p?.dispose();
});

const health = async (id: string) => (await api(p, "GET", `/v2/${id}/health`)).body;
const errorOf = (job: { error: string }) => JSON.parse(job.error) as Record<string, unknown>;

describe("an endpoint whose module does not import", () => {
  it("fails queued and new jobs within 10 s with type, message, file:line and remedy; /health and logs say why; a fixed redeploy recovers", async () => {
    const { buildId } = await uploadArtifact(p, await buildAppArtifact({ "app/__init__.py": "", "app/main.py": BROKEN }, ENDPOINTS), "image-app");
    const ep = await saveImageEndpoint(p, buildId, { name: "broken" });

    const t0 = Date.now();
    const queued = [];
    for (let i = 0; i < 5; i++) queued.push((await api(p, "POST", `/v2/${ep.id}/run`, { input: { value: i } })).body.id as string);
    const jobs = await Promise.all(queued.map((id) => waitFinal(p, ep.id, id, 10_000)));
    expect(Date.now() - t0).toBeLessThan(10_000);
    for (const job of jobs) {
      expect(job.status).toBe("FAILED");
      const error = errorOf(job);
      expect(error).toMatchObject({ error_type: "ModuleNotFoundError", file: "app/main.py", line: 3, remedy: REMEDY });
      expect(error.error_message).toContain("No module named 'not_installed_pkg'");
      expect(error.error_message).toContain("app/main.py:3");
      expect(error.error_message).toContain(REMEDY);
    }

    const sync = await api(p, "POST", `/v2/${ep.id}/runsync`, { input: { value: 9 } });
    expect(sync.body.status).toBe("FAILED");
    expect(errorOf(sync.body).error_type).toBe("ModuleNotFoundError");

    const h = await health(ep.id);
    expect(h.error).toMatchObject({ error_type: "ModuleNotFoundError", file: "app/main.py", line: 3, remedy: REMEDY });
    expect(h.workers.unhealthy).toBe(1);
    p.context.store.logs.flush();
    const logs = p.context.store.logs.tail(ep.id, 200).join("\n");
    expect(logs).toContain("cannot import its endpoint's module: ModuleNotFoundError at app/main.py:3");
    expect(logs).toContain("No module named 'not_installed_pkg'");

    // no crash loop: the one worker keeps serving (failing) jobs
    const workers = p.context.supervisor.forEndpoint(ep.id).map((w) => w.id);
    await new Promise((r) => setTimeout(r, 1500));
    expect(p.context.supervisor.forEndpoint(ep.id).map((w) => w.id)).toEqual(workers);

    const fixed = await uploadArtifact(p, await buildAppArtifact({ "app/__init__.py": "", "app/main.py": FIXED }, ENDPOINTS), "image-app");
    await saveImageEndpoint(p, fixed.buildId, { id: ep.id, name: "broken" });
    const ok = await api(p, "POST", `/v2/${ep.id}/runsync`, { input: { value: 7 } });
    expect(ok.body).toMatchObject({ status: "COMPLETED", output: { value: 7 } });
    expect((await health(ep.id)).error).toBeUndefined();
  }, 40_000);

  it("answers load-balanced calls 503 JSON with the same reason", async () => {
    const { buildId } = await uploadArtifact(p, await buildAppArtifact({ "app/__init__.py": "", "app/main.py": BROKEN }, ENDPOINTS), "image-app");
    const ep = await saveImageEndpoint(p, buildId, { name: "broken-api", type: "LB" });
    const r = await api(p, "GET", `/lb/${ep.id}/hello`);
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ error_type: "ModuleNotFoundError", file: "app/main.py", line: 3, remedy: REMEDY });
    expect(r.body.error).toContain("No module named 'not_installed_pkg'");
    await waitFor("/health to say why", async () => (await health(ep.id)).error?.error_type === "ModuleNotFoundError", 5000);
  }, 20_000);
});

describe("a worker that exits before it is ready", () => {
  it("backs off its restarts and fails the queued jobs after two exits in a row, with its last output", async () => {
    const dying = `import os, sys\n\nprint("cannot go on", file=sys.stderr, flush=True)\nos._exit(3)\n`;
    const { buildId } = await uploadArtifact(p, await buildAppArtifact({ "app/__init__.py": "", "app/main.py": dying }, [ENDPOINTS[0]!]), "image-app");
    const ep = await saveImageEndpoint(p, buildId, { name: "broken" });
    const t0 = Date.now();
    const r = await api(p, "POST", `/v2/${ep.id}/run`, { input: {} });
    const job = await waitFinal(p, ep.id, r.body.id, 15_000);
    expect(job.status).toBe("FAILED");
    const error = errorOf(job);
    expect(error.error_type).toBe("WorkerStartError");
    expect(error.error_message).toContain("exited (code 3) before it was ready (2 times in a row)");
    expect(error.error_message).toContain("cannot go on");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000); // the second start waited out the 1 s backoff
    expect((await health(ep.id)).error.error_type).toBe("WorkerStartError");
    p.context.store.logs.flush();
    const notes = p.context.store.logs.tail(ep.id, 100).filter((l) => l.includes("next start in"));
    expect(notes.slice(0, 2).map((l) => /next start in (\d+) s/.exec(l)?.[1])).toEqual(["1", "2"]);
  }, 30_000);
});
