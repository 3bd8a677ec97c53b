/**
 * The containment tests skip where the machine lacks what they test (root, bwrap, slirp4netns, a
 * loop device, cgroups): a laptop without root still runs the rest. On CI (`CI` set, as .ci/run
 * does) that would make a runner without privileges green with none of them run, so here each
 * missing piece is a failure that names the tests it silences and what installs it.
 */
import { describe, expect, it } from "vitest";
import { diskSupport } from "../../platform/volumes/volume-disk.ts";
import { detectCgroups, removeOwnCgroups } from "../../platform/workers/cgroups.ts";
import { egressAvailable } from "../../platform/workers/sandbox-egress.ts";
import { bwrapUsable } from "../../platform/workers/sandbox.ts";

describe.runIf(Boolean(process.env.CI))("on CI, the machine has what the containment tests need", () => {
  it("root (egress, resources, netns-orphans, volume-disk, containment run as root)", () => {
    expect(process.getuid?.(), "the tests run as root on CI: .ci/run under sudo or a root container").toBe(0);
  });

  it("a usable bubblewrap (every sandbox test)", async () => {
    expect(await bwrapUsable(), "bwrap cannot start a sandbox: scripts/setup.sh installs bubblewrap").toBe(true);
  });

  it("slirp4netns and ip (egress, netns-orphans)", async () => {
    expect(await egressAvailable(), "no egress for worker namespaces: scripts/setup.sh installs slirp4netns").toBe(true);
  });

  it("a loop device and the ext4 tools (volume-disk, volume size limits)", () => {
    expect(diskSupport()).toEqual({ ok: true });
  });

  it("cgroups with the memory, pids and cpu controllers (resources)", () => {
    const support = detectCgroups(`svc-privileges-${process.pid}`);
    try {
      expect(support.controllers.sort(), support.why).toEqual(["cpu", "memory", "pids"]);
    } finally {
      removeOwnCgroups(support);
    }
  });
});
