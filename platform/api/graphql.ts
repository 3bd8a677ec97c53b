/**
 * POST /graphql: the management API. The schema is built once; parsed and validated documents are
 * cached by query text. Malformed JSON, syntax and validation errors answer 400 with
 * `{"errors": [...]}`; resolver errors come back in `errors` with HTTP 200 (GraphQL over HTTP),
 * each with `extensions.code` (the error catalogue's code) when it is one of ours.
 */
import type { H3, H3Event } from "h3";
import { readFileSync } from "node:fs";
import { buildSchema, execute, Kind, parse, validate, type GraphQLError, type DocumentNode, type ExecutionResult } from "graphql";
import { packagePath } from "../../core/package-root.ts";
import { errors, isSvcError, type SvcError } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import { createResolvers, type ResolverHooks } from "../graphql/resolvers.ts";
import { json, jsonText, readJson, errorResponse } from "./_http.ts";
import { checkAnswer, checkQueryCost, checkQueryText, GRAPHQL_LIMITS } from "../graphql/cost-limit.ts";
import { scopedQueryAllowed } from "./worker-scope.ts";
import type { KeyScope } from "../worker-keys.ts";
import type { Identity } from "../keys/access.ts";
import { operationRefusal } from "./graphql-access.ts";
import { AUDITED } from "../history/audit.ts";

const SCHEMA_FILE = packagePath("platform", "graphql", "schema.graphql");
const MAX_BODY_BYTES = 50_000_000;
const CACHE_SIZE = 256;

function formatError(error: GraphQLError) {
  const original = error.originalError;
  const out: Record<string, unknown> = { message: original && isSvcError(original) ? original.message : error.message };
  if (error.locations) out.locations = error.locations;
  if (error.path) out.path = error.path;
  if (original && isSvcError(original)) out.extensions = { code: original.code, status: original.status };
  else if (original) out.extensions = { code: "INTERNAL" };
  return out;
}

const badRequest = (message: string) => json(400, { errors: [{ message }] });
/** A catalogue error in GraphQL's shape, with `error` and `code` beside it as every other route has them. */
const refusal = (error: SvcError) =>
  json(error.status, { error: error.message, code: error.code, errors: [{ message: error.message, extensions: { code: error.code } }] });
const TOO_MANY_TOKENS = /contains more tha[nt] \d+ tokens/; // graphql-js 16 writes "more that"

/** A refused management action is recorded too, with the refusal as its outcome (../history/audit.ts). */
function auditRefusal(ctx: PlatformContext, identity: Identity, document: DocumentNode, error: SvcError): void {
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION || definition.operation !== "mutation") continue;
    for (const selection of definition.selectionSet.selections) {
      const action = selection.kind === Kind.FIELD ? AUDITED[selection.name.value] : undefined;
      if (action) ctx.audit.record({ keyName: identity.name, action }, error.code);
    }
  }
}

export function registerGraphql(app: H3, ctx: PlatformContext, hooks: ResolverHooks): void {
  const schema = buildSchema(readFileSync(SCHEMA_FILE, "utf8"));
  const rootValue = createResolvers(ctx, hooks);
  const documents = new Map<string, DocumentNode>();

  /** The parsed, costed and validated document; what is wrong with it otherwise. */
  const documentOf = (query: string): DocumentNode | SvcError | readonly GraphQLError[] => {
    const cached = documents.get(query);
    if (cached) return cached;
    const tooLong = checkQueryText(query);
    if (tooLong) return tooLong;
    let document: DocumentNode;
    try {
      document = parse(query, { maxTokens: GRAPHQL_LIMITS.tokens });
    } catch (error) {
      if (TOO_MANY_TOKENS.test((error as Error).message))
        return errors.GRAPHQL_TOO_COSTLY("tokens", `more than ${GRAPHQL_LIMITS.tokens}`, `${GRAPHQL_LIMITS.tokens} tokens`);
      return [error as GraphQLError];
    }
    const costly = checkQueryCost(document); // before validation, whose cost grows with the square of a selection's fields
    if (costly) return costly;
    const problems = validate(schema, document);
    if (problems.length > 0) return problems;
    if (documents.size >= CACHE_SIZE) documents.delete(documents.keys().next().value!);
    documents.set(query, document);
    return document;
  };

  app.post("/graphql", async (event: H3Event) => {
    let body: unknown;
    try {
      body = await readJson(event, MAX_BODY_BYTES);
    } catch (error) {
      const res = errorResponse(error, ctx.options.log);
      return isSvcError(error) ? json(error.status, { errors: [{ message: error.message }] }) : res;
    }
    if (!body || typeof body !== "object" || Array.isArray(body))
      return badRequest('The body must be a JSON object {"query", "variables"?, "operationName"?}.');
    const { query, variables, operationName } = body as Record<string, unknown>;
    if (typeof query !== "string" || query.trim() === "") return badRequest("query must be a non-empty string.");
    if (variables !== undefined && variables !== null && (typeof variables !== "object" || Array.isArray(variables)))
      return badRequest("variables must be an object.");
    if (operationName !== undefined && operationName !== null && typeof operationName !== "string") return badRequest("operationName must be a string.");

    const document = documentOf(query);
    if (isSvcError(document)) return refusal(document);
    if (!("kind" in document)) return json(400, { errors: document.map(formatError) });
    const workerScope = event.context.workerScope as KeyScope | undefined;
    if (workerScope && !scopedQueryAllowed(document, (operationName as string) ?? undefined)) {
      return refusal(errors.KEY_SCOPE(ctx.workerKeys.describe(workerScope), "this GraphQL operation (a worker's key may only query getBuild)"));
    }
    const identity = event.context.identity as Identity | undefined;
    const forbidden =
      identity && operationRefusal(schema, ctx.store, identity, document, (operationName as string) ?? undefined, variables as Record<string, unknown>);
    if (forbidden) {
      auditRefusal(ctx, identity!, document, forbidden);
      return refusal(forbidden);
    }
    let result: ExecutionResult;
    try {
      result = await execute({
        schema,
        document,
        rootValue,
        contextValue: { workerScope, identity },
        variableValues: (variables as Record<string, unknown>) ?? undefined,
        operationName: (operationName as string) ?? undefined,
      });
    } catch (error) {
      // execute throws only for unusable input (e.g. an unknown operation name)
      return badRequest((error as Error).message);
    }
    const out: Record<string, unknown> = {};
    if (result.errors) out.errors = result.errors.map(formatError);
    if (result.data !== undefined) out.data = result.data;
    const text = JSON.stringify(out);
    const tooBig = checkAnswer(text);
    if (tooBig) return refusal(tooBig);
    // No data at all: the request itself was unusable (bad variables, unknown operation).
    return jsonText(result.data === undefined ? 400 : 200, text);
  });
}
