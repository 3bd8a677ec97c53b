/**
 * The leaf types of an endpoint declaration, part of the public types (core/types.ts re-exports
 * them): apart so that the modules types.ts references (manifest, errors, the Endpoint schema) use
 * them without an import cycle. Types that follow a rule (HttpMethod, Hardware, Scaling) live with
 * the rule in core/endpoint-schema.ts.
 */
export type EndpointType = "QB" | "LB";

/** A value the discovery step evaluated statically from Python source. */
export type StaticValue = string | number | boolean | null | StaticValue[] | { [key: string]: StaticValue };

/** Where something is in the user's sources (for errors and the manifest). */
export interface SourceLocation {
  /** POSIX path relative to the project root. */
  file: string;
  line: number;
}
