/**
 * Secret references in an endpoint's env: `{{ PLATFORM_SECRET_<name> }}`, the hosted platform's
 * template-secret form (reference/platform-api.md 3b). The value replaces the reference only when
 * a worker starts (platform/secrets.ts); everywhere else (manifest, artifact, GraphQL) the
 * reference stays as written. docs/platform.md, "Secrets".
 */

/** A secret's name: letters, digits, `_` and `-`, at most 64. */
export const SECRET_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const REFERENCE = /\{\{\s*PLATFORM_SECRET_([A-Za-z0-9_-]{1,64})\s*\}\}/g;

/** The secret names an env's values reference, in order, once each. */
export function secretNamesIn(values: Iterable<string>): string[] {
  const names = new Set<string>();
  for (const value of values) for (const match of value.matchAll(REFERENCE)) names.add(match[1]!);
  return [...names];
}

/** The value with each reference replaced by `lookup(name)`. */
export function substituteSecrets(value: string, lookup: (name: string) => string): string {
  return value.replace(REFERENCE, (_ref, name: string) => lookup(name));
}
