/**
 * A failed job's `error` as a reader wants it: the platform stores what the worker sent — for a
 * function that raised, the JSON text `{"error_type", "error_message", "error_traceback"}` — and
 * keeps it so (the hosted contract). Clients show `error_type: error_message` and keep the
 * traceback apart: the dev server's answers (dev/routes), the typed client's EndpointCallError
 * (cli/commands/_typed-client.ts, its own copy: the generated file imports nothing). Anything
 * else (a platform's plain message) is shown as it is.
 */
export interface JobErrorView {
  /** `ValueError: bad input`, or the plain message. */
  summary: string;
  type?: string;
  message: string;
  traceback?: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The parts of a job's `error` (a JSON string or an object of the worker's fields, or a plain message); undefined for none. */
export function jobErrorView(error: unknown): JobErrorView | undefined {
  if (error === undefined || error === null || error === "") return undefined;
  let fields: unknown = error;
  if (typeof error === "string") {
    try {
      fields = JSON.parse(error);
    } catch {
      return { summary: error, message: error };
    }
  }
  if (!isRecord(fields) || (typeof fields.error_type !== "string" && typeof fields.error_message !== "string")) {
    const text = typeof error === "string" ? error : JSON.stringify(error);
    return { summary: text, message: text };
  }
  const type = typeof fields.error_type === "string" && fields.error_type ? fields.error_type : undefined;
  const message = typeof fields.error_message === "string" ? fields.error_message : "";
  const traceback = typeof fields.error_traceback === "string" && fields.error_traceback.trim() ? fields.error_traceback : undefined;
  return { summary: type ? `${type}: ${message}` : message, type, message, traceback };
}
