/**
 * What one GraphQL request may cost, checked before the platform validates or runs it: the query's
 * size and tokens (parse stops at the limit), then its fields, aliases and depth counted over the
 * parsed document with fragments expanded (a budget, so a fragment used many times cannot multiply
 * the walk). Validation's overlapping-fields rule is quadratic in the fields of one selection: a
 * query of 250,000 aliased fields held the event loop for 25 s before these limits. The answer's
 * size is checked before it is sent. Any of them over: 400 GRAPHQL_TOO_COSTLY naming the limit.
 * docs/platform.md, "Limits".
 */
import { Kind, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode } from "graphql";
import { errors, type SvcError } from "../../core/errors.ts";

export const GRAPHQL_LIMITS = {
  /** The query text (variables are JSON values, limited with the body). */
  queryBytes: 64 * 1024,
  /** Lexical tokens: graphql-js's parser stops at this many. */
  tokens: 20_000,
  /** Fields selected, fragments expanded. svc's own largest query selects under 60. */
  fields: 2000,
  /** Aliased fields: one alias per field asks the same resolver again (250,000 `getBuild`s). */
  aliases: 100,
  /** Nested selection sets. The schema's deepest path is 5. */
  depth: 15,
  /** The JSON answer. */
  answerBytes: 64 * 1024 * 1024,
};

/** Refuses a query text over the size limit (before it is parsed). */
export function checkQueryText(query: string): SvcError | undefined {
  const bytes = Buffer.byteLength(query);
  return bytes > GRAPHQL_LIMITS.queryBytes ? errors.GRAPHQL_TOO_COSTLY("query size", `${bytes} bytes`, `${GRAPHQL_LIMITS.queryBytes} bytes`) : undefined;
}

/** Counts the document's fields, aliases and depth; the first limit it passes, if any. */
export function checkQueryCost(document: DocumentNode): SvcError | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  let fields = 0;
  let aliases = 0;
  let over: SvcError | undefined;
  const walk = (set: SelectionSetNode, depth: number, path: Set<string>): void => {
    if (depth > GRAPHQL_LIMITS.depth) over ??= errors.GRAPHQL_TOO_COSTLY("depth", `more than ${GRAPHQL_LIMITS.depth} levels`, `${GRAPHQL_LIMITS.depth} levels`);
    for (const selection of set.selections) {
      if (over) return;
      if (selection.kind === Kind.FIELD) {
        if (++fields > GRAPHQL_LIMITS.fields)
          over = errors.GRAPHQL_TOO_COSTLY("fields", `more than ${GRAPHQL_LIMITS.fields}`, `${GRAPHQL_LIMITS.fields} fields`);
        else if (selection.alias && ++aliases > GRAPHQL_LIMITS.aliases)
          over = errors.GRAPHQL_TOO_COSTLY("aliases", `more than ${GRAPHQL_LIMITS.aliases}`, `${GRAPHQL_LIMITS.aliases} aliased fields`);
        else if (selection.selectionSet) walk(selection.selectionSet, depth + 1, path);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet, depth, path);
      else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (!fragment || path.has(name)) continue; // unknown or cyclic: validation refuses it
        path.add(name);
        walk(fragment.selectionSet, depth, path);
        path.delete(name);
      }
    }
  };
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) walk(definition.selectionSet, 1, new Set());
    if (over) return over;
  }
  return undefined;
}

/** Refuses an answer over the size limit. */
export function checkAnswer(text: string): SvcError | undefined {
  return text.length > GRAPHQL_LIMITS.answerBytes
    ? errors.GRAPHQL_TOO_COSTLY("answer size", `${text.length} characters`, `${GRAPHQL_LIMITS.answerBytes} bytes`)
    : undefined;
}
