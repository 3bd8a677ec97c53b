/** The public API of svc as a library (`import ... from "@svc-dev/svc"`). svc/testing runs it with the built-in plugins. */
export { defineConfig, loadConfig, DEFAULT_IMAGES } from "./config.ts";
export { Pipeline, STAGES, HOOK_ORDER, definePlugin } from "./pipeline.ts";
export { runPipeline, createContext, resolvePluginList, type RunOptions } from "./build.ts";
export { SvcError, errors, isSvcError, pluginError, type ErrorCode, type PluginVerdict } from "./errors.ts";
export { manifestSchema, readManifest, writeManifest, parseManifest } from "./manifest.ts";
export { createLogger } from "./logger.ts";
/** zod, for a plugin's options schema (definePlugin's `options`): the same zod svc checks its config with. */
export { z } from "zod";
export type * from "./types.ts";
