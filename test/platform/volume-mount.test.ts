/**
 * How a worker sees its endpoint's volume, as unit facts: the bwrap arguments bind the volume's
 * folder read-write at /platform-volume (before the sandbox root turns read-only), and without the
 * sandbox the env says where the folder really is, rewriting the endpoint's /platform-volume paths.
 * test/e2e/volume-mount.test.ts runs a real worker in the sandbox.
 */
import { describe, expect, it } from "vitest";
import { bwrapArgs } from "../../platform/workers/sandbox.ts";
import { volumeEnv, VOLUME_MOUNT_PATH } from "../../platform/volumes/mount.ts";

const spec = { prefixes: [], hidden: [], packages: [], buildDir: "/state/builds/b1", etc: { dir: "/state/etc", binds: [] }, command: ["python3", "h.py"] };

describe("a worker's network volume", () => {
  it("is bound read-write at /platform-volume in the sandbox, before the root is made read-only", () => {
    const args = bwrapArgs({ ...spec, volumeDir: "/state/volumes/vol_x" });
    const at = args.findIndex((a, i) => a === "--bind" && args[i + 1] === "/state/volumes/vol_x");
    expect(args.slice(at, at + 3)).toEqual(["--bind", "/state/volumes/vol_x", "/platform-volume"]);
    expect(at).toBeLessThan(args.lastIndexOf("--remount-ro"));
    expect(at).toBeGreaterThan(args.indexOf("--dev")); // a bind under a fresh /dev or /tmp would be hidden
  });

  it("is absent from an endpoint without one", () => {
    expect(bwrapArgs(spec).join(" ")).not.toContain("platform-volume");
  });

  it("is named by PLATFORM_VOLUME_PATH; without the sandbox /platform-volume paths point at the folder", () => {
    const env = { WAN_CHECKPOINT_DIR: "/platform-volume/Wan2.2", OTHER: "/platform-volumes-not", ROOT: "/platform-volume" };
    expect(volumeEnv(env, VOLUME_MOUNT_PATH)).toEqual({ ...env, PLATFORM_VOLUME_PATH: "/platform-volume" });
    expect(volumeEnv(env, "/state/volumes/vol_x")).toEqual({
      WAN_CHECKPOINT_DIR: "/state/volumes/vol_x/Wan2.2",
      OTHER: "/platform-volumes-not",
      ROOT: "/state/volumes/vol_x",
      PLATFORM_VOLUME_PATH: "/state/volumes/vol_x",
    });
  });
});
