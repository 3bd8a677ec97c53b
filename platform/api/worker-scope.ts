/**
 * What a worker key (../worker-keys.ts) may call: the queue routes of its scope's endpoints, their
 * load-balanced routes, and GraphQL's getBuild of its app's builds. Everything else answers 403
 * KEY_SCOPE naming the scope. docs/platform.md, "Threat model".
 */
import type { H3Event } from "h3";
import { Kind, type DocumentNode, type OperationDefinitionNode } from "graphql";
import { errors } from "../../core/errors.ts";
import { SCOPED_QUEUE_ROUTES, type KeyScope, type WorkerKeys } from "../worker-keys.ts";

const QUEUE_ROUTE = /^\/v2\/([^/]+)\/([^/]+)/;
const LB_ROUTE = /^\/lb\/([^/]+)/;

/** undefined when the request is within the scope (GraphQL is checked by query: scopedQueryAllowed). */
export function scopeRefusal(keys: WorkerKeys, scope: KeyScope, event: H3Event, lbHostEndpoint: string | undefined) {
  const path = event.url.pathname;
  let endpointId: string | undefined;
  if (lbHostEndpoint) endpointId = lbHostEndpoint;
  else if (path === "/graphql") return undefined;
  else {
    const lb = LB_ROUTE.exec(path);
    const queue = lb ? undefined : QUEUE_ROUTE.exec(path);
    endpointId = lb?.[1] ?? (queue && SCOPED_QUEUE_ROUTES.has(queue[2]!) ? queue[1] : undefined);
  }
  return endpointRefusal(keys, scope, endpointId, `${event.req.method} ${path}`);
}

/** undefined when the scope reaches the endpoint, else 403 KEY_SCOPE naming the scope and `what` was called (the hot path's runsync too). */
export function endpointRefusal(keys: WorkerKeys, scope: KeyScope, endpointId: string | undefined, what: string) {
  return endpointId && keys.reachesEndpoint(scope, endpointId) ? undefined : errors.KEY_SCOPE(keys.describe(scope), what);
}

/** A worker key's GraphQL: a query whose fields are all getBuild (each checked by its resolver). */
export function scopedQueryAllowed(document: DocumentNode, operationName: string | undefined): boolean {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const operation = operationName ? operations.find((o) => o.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
  if (!operation || operation.operation !== "query") return false;
  return operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && (s.name.value === "getBuild" || s.name.value === "__typename"));
}
