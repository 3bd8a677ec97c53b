import { defineConfig } from "@svc-dev/svc";
import type { SvcPlugin } from "@svc-dev/svc/types";

/**
 * Lets the deploying shell override named endpoint variables (e.g. `WAN_CONFIG=tiny svc deploy`
 * for the CPU demo). Only the listed names are forwarded: the rest of the local environment never
 * leaks into the deployed endpoint.
 */
function forwardEnv(names: string[]): SvcPlugin {
  const name = "svc-plugin-forward-env";
  return {
    name,
    apply(pipeline) {
      pipeline.hooks.manifest.tapPromise(name, async (manifest, ctx) => {
        for (const key of names) {
          const value = process.env[key];
          if (value === undefined) continue;
          for (const endpoint of Object.values(manifest.endpoints)) endpoint.env[key] = value;
          ctx.logger.info(`  env ${key}=${value} forwarded from the shell`);
        }
        return manifest;
      });
    },
  };
}

export default defineConfig({
  app: "image-to-video",
  // The GPU image's Python where it is not 3.11 (bench/gpu/bundle.sh builds for the GPU machine's 3.12).
  pythonVersion: process.env.WAN_PYTHON_VERSION || undefined,
  plugins: [forwardEnv(["WAN_CONFIG", "WAN_CHECKPOINT_DIR", "WAN_SOLVER", "WAN_OFFLOAD", "WAN_LORA", "WAN_STEP_CACHE", "WAN_MAGCACHE"])],
});
