/**
 * The embedded platform on a port that is taken: it takes no other port (the user named this one),
 * so PORT_IN_USE must not claim that it looked for a free one after it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isSvcError } from "../../core/errors.ts";
import { startTestPlatform } from "./_support.ts";
import { runSvc } from "../_support/cli.ts";
import { readState } from "../../platform/local.ts";

describe("platform start on a taken port", () => {
  let blocker: Server;
  let dataDir: string;
  afterAll(async () => {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
    await rm(dataDir, { recursive: true, force: true });
  });

  it("is PORT_IN_USE naming the port, with a remedy, and no word of a fallback", async () => {
    blocker = createServer();
    const port = await new Promise<number>((resolve) => blocker.listen(0, "127.0.0.1", () => resolve((blocker.address() as { port: number }).port)));
    dataDir = await mkdtemp(join(tmpdir(), "svc-port-"));
    const error = await startTestPlatform({ port, dataDir }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(isSvcError(error) && error.code).toBe("PORT_IN_USE");
    expect((error as Error).message).toContain(`Port ${port} is in use.`);
    expect((error as Error).message).not.toContain("no free port was found");
    expect(isSvcError(error) && error.remedy).toContain("--port");
  });

  it("`svc platform start --detach` on it is the same PORT_IN_USE, and starts nothing", { timeout: 60_000 }, async () => {
    const port = (blocker.address() as { port: number }).port;
    const dir = join(dataDir, "detached");
    const r = await runSvc(["platform", "start", "--detach", "--port", String(port), "--dir", dir], { env: { ...process.env, NO_COLOR: "1" } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`[PORT_IN_USE] Port ${port} is in use.`);
    expect(r.stdout).not.toContain("running in the background");
    expect(readState(dir)).toBeUndefined();
  });
});
