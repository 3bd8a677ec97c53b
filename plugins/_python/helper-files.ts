/**
 * Where the Python helper (helper/, a stdlib package started as `python3 helper`) and the SDK file
 * it reads live, and the helper's version: the hash of its files, part of the key of every cache
 * built on its answers (discovery's, requirements'), so a changed helper starts fresh caches.
 */
import { readdirSync } from "node:fs";
import { packagePath, SVC_PATHS } from "../../core/package-root.ts";
import type { FileIndex } from "../_file-index.ts";

export const HELPER_DIR = SVC_PATHS.discoverScript;
/** The Endpoint argument names the helper reads (generated from core/endpoint-schema.ts). */
export const ENDPOINT_SCHEMA_PY = packagePath("runtime", "python", "svc", "_schema.py");

/** The hash of the helper's Python files, from the run's file index (unchanged files are not read again). */
export function helperVersion(index: FileIndex): Promise<string> {
  const files = readdirSync(HELPER_DIR).filter((name) => name.endsWith(".py"));
  return index.listDigest(HELPER_DIR, files);
}
