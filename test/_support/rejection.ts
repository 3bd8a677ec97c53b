/** Awaits a promise that must reject and answers the error (svc's failures are SvcErrors). */
import type { SvcError } from "../../core/errors.ts";

export async function rejection(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise;
  } catch (error) {
    return error as SvcError;
  }
  throw new Error("expected a rejection");
}
