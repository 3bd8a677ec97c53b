/** Where a thrown error came from, for PLUGIN_ERROR's `at file:line:column` (core/errors.ts). */

/**
 * The error's stack, formatted with source maps on (V8 formats a stack when it is first read): the
 * config loader keeps svc.config.ts's map, so frames in it name the user's file and line.
 */
export function mappedStack(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const mapped = process.sourceMapsEnabled;
  process.setSourceMapsEnabled(true);
  try {
    return error.stack;
  } finally {
    process.setSourceMapsEnabled(mapped);
  }
}

/** `file:line:column` of a stack's first frame, without node: internals. */
export function firstStackFrame(stack: string): string | undefined {
  const frame = stack.split("\n").find((line) => /^\s+at /.test(line) && !line.includes("node:"));
  return frame
    ?.trim()
    .replace(/^at (?:.*? \()?(.*?)\)?$/, "$1")
    .replace(/^file:\/\//, "");
}
