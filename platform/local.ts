/**
 * The embedded platform on this machine, seen from outside it: its state folder (API key, pid and
 * URL) and finding or starting one in the background (docs/platform.md). The CLI's light entry into
 * platform/: it loads no server, SQLite, h3 or undici, so a command that only looks for a platform
 * starts fast. Starting one inside this process is index.ts's `startPlatform`.
 */
export { ensureLocalPlatform, platformAnswers, runningPlatform, startDetached } from "./ensure.ts";
export { API_KEY_FILE, isAlive, platformDir, readApiKey, readState, removeState, writeState } from "./state-dir.ts";
// Reads SVC_WORKERS / SVC_RAY_ADDRESS so `svc platform start` checks them before it starts anything.
export { workersFromEnv } from "./workers-option.ts";
