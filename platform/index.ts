/** The embedded platform: start one in this process, or make sure one runs for the CLI. */
export { startPlatform, type RunningPlatform } from "./server.ts";
export { ensureLocalPlatform, runningPlatform, startDetached, platformAnswers } from "./ensure.ts";
export { platformDir, readApiKey, readState } from "./state-dir.ts";
export { resolveOptions, HOSTED_RATE_LIMITS, type PlatformOptions, type RateLimits } from "./options.ts";
export { launchWorker } from "./workers/backends/launcher.ts";
