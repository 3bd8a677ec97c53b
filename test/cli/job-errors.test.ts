/**
 * A failed job as clients show it: the platform stores what the worker sent (`error` is the JSON
 * text of error_type, error_message and error_traceback) and keeps it so; the typed client's
 * EndpointCallError says `error_type: error_message` with the traceback in its own field (and the
 * stored error as it is in `detail`), and the dev server (`svc run`) answers `error` the same way
 * with `traceback` beside it. A plain message (the platform's INPUT_INVALID) stays as it is.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { renderTypedClient } from "../../cli/commands/_typed-client.ts";
import { jobErrorView } from "../../core/client/index.ts";
import { shownJob } from "../../dev/routes/routes.ts";
import { runBuild } from "../../plugins/index.ts";
import { captureLogger, copyFixture } from "../plugins/_helpers.ts";

const TRACEBACK =
  'Traceback (most recent call last):\n  File "/app/workers/hello.py", line 9, in hello\n    raise ValueError("bad input")\nValueError: bad input\n';
const STORED = JSON.stringify({ error_type: "ValueError", error_message: "bad input", error_traceback: TRACEBACK });

describe("a failed job's error", () => {
  const root = copyFixture("dev-app");
  const out = mkdtempSync(join(tmpdir(), "svc-job-errors-"));
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  });

  it("reads the worker's fields from the stored JSON text; a plain message stays as it is", () => {
    expect(jobErrorView(STORED)).toEqual({ summary: "ValueError: bad input", type: "ValueError", message: "bad input", traceback: TRACEBACK });
    expect(jobErrorView("INPUT_INVALID: name: expected str")).toEqual({
      summary: "INPUT_INVALID: name: expected str",
      message: "INPUT_INVALID: name: expected str",
    });
    expect(jobErrorView(undefined)).toBeUndefined();
  });

  it("the typed client throws `error_type: error_message`, the traceback apart, the stored error in detail", { timeout: 60_000 }, async () => {
    const ctx = await runBuild({ root, options: { until: "manifest", noDeps: true }, logger: captureLogger() });
    const file = join(out, "client.ts");
    writeFileSync(
      file,
      renderTypedClient({
        ...ctx.manifest!,
        urls: { hello: "http://platform.test/v2/ep_hello", api: "http://platform.test/lb/ep_api", slow: "http://platform.test/v2/ep_slow" },
      }),
    );
    const { createClient, EndpointCallError } = await import(file);
    const fakeFetch = async () =>
      new Response(JSON.stringify({ id: "job_1", status: "FAILED", error: STORED }), { status: 200, headers: { "content-type": "application/json" } });
    const client = createClient({ apiKey: "k", fetch: fakeFetch });
    const error = await client.hello({ name: "x" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndpointCallError);
    expect(error.message).toBe("ValueError: bad input (job job_1 of hello ended FAILED)"); // the shape of Python's RemoteCallError
    expect(error.errorType).toBe("ValueError");
    expect(error.traceback).toBe(TRACEBACK);
    expect(error.detail).toBe(STORED); // what the platform stored, unchanged
  });

  it("the dev server answers `error_type: error_message` and the traceback beside it", () => {
    expect(shownJob({ id: "job_1", status: "FAILED", error: STORED })).toEqual({
      id: "job_1",
      status: "FAILED",
      error: "ValueError: bad input",
      traceback: TRACEBACK,
    });
    const plain = { id: "job_2", status: "FAILED" as const, error: "INPUT_INVALID: name: expected str" };
    expect(shownJob(plain)).toBe(plain);
  });
});
