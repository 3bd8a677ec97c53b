/** The public API of svc as a library. */
export { defineConfig, loadConfig, DEFAULT_IMAGES } from "./config.ts";
export { Pipeline, STAGES } from "./pipeline.ts";
export { runPipeline, createContext, resolvePluginList } from "./build.ts";
export { SvcError, errors, isSvcError, type ErrorCode } from "./errors.ts";
export { manifestSchema, readManifest, writeManifest, parseManifest } from "./manifest.ts";
export { createLogger } from "./logger.ts";
export type * from "./types.ts";
