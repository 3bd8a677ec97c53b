/** Lookups the resolvers share: a row that must exist (NOT_FOUND otherwise) and a JSON argument sent as a string. */
import { errors } from "../../core/errors.ts";
import type { Store } from "../store/index.ts";

export const mustApp = (store: Store, id: string) => store.apps.get(id) ?? throwError(errors.NOT_FOUND("App", id));
export const mustEnvironment = (store: Store, id: string) => store.apps.environment(id) ?? throwError(errors.NOT_FOUND("Environment", id));
export const mustBuild = (store: Store, id: string) => store.builds.get(id) ?? throwError(errors.NOT_FOUND("Build", id));

export function throwError(error: Error): never {
  throw error;
}

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw errors.BAD_REQUEST("Expected a JSON object, got a string that is not JSON.");
  }
}
