/**
 * Who a connection is from, for the connection caps (./connection-caps.ts): the credential its
 * first request presents, verified, never the header as sent (a sender can make up a new one per
 * connection). A worker on its own routes is its worker id when its token verifies for that id;
 * anything else is the key it presents when that key verifies (the platform's key, a worker key by
 * its scope), an artifact upload by its upload token, an S3 request by its signing key. Anything
 * that proves nobody is undefined (the caps' shared budget for the unverified). This is the one
 * place that knows the kinds of credential: a new kind of key is one more line here.
 */
import type { IncomingMessage } from "node:http";
import type { PlatformContext } from "../context.ts";
import { secretMatches } from "../_ids.ts";
import { ARTIFACT_ROUTE } from "../artifacts/receive.ts";
import type { S3Api } from "../volumes/s3-handler.ts";
import { workerByToken } from "../workers/worker-credentials.ts";
import { keyOf } from "./_http.ts";
import type { ConnectionIdentity, Identify } from "./connection-caps.ts";

const WORKER_ROUTE = /^\/v2\/_worker\/([^/?]+)/;
const UPLOAD_ROUTE = new RegExp(`^${ARTIFACT_ROUTE}/([^/?]+)\\?(.*)$`);

type Context = Pick<PlatformContext, "workerKeys" | "supervisor" | "store">;

/** `keyHolder`: the holder of a user key, the platform's or a named one (api/key-access.ts `identify`). */
export function createIdentify(
  ctx: Context,
  s3: Pick<S3Api, "owns" | "signer">,
  keyHolder: (key: string | undefined) => { name: string } | undefined,
): Identify {
  const asKey = (id: string): ConnectionIdentity => ({ id, worker: false });

  const byKey = (key: string | undefined): ConnectionIdentity | undefined => {
    const holder = keyHolder(key);
    if (holder) return asKey(`key ${holder.name}`);
    const scope = ctx.workerKeys.verify(key);
    return scope ? asKey(`worker key ${scope.kind}.${scope.id}`) : undefined;
  };
  const byUploadToken = (upload: string, query: string): ConnectionIdentity | undefined => {
    const token = new URLSearchParams(query).get("token") ?? undefined;
    return secretMatches(token, ctx.store.builds.upload(upload)?.tokenHash) ? asKey(`upload ${upload}`) : undefined;
  };

  return (req: IncomingMessage) => {
    const url = req.url ?? "";
    if (s3.owns(url)) {
      const signer = s3.signer(req);
      return signer ? asKey(`s3 ${signer}`) : undefined;
    }
    const key = keyOf(req.headers.authorization);
    const worker = WORKER_ROUTE.exec(url)?.[1];
    if (worker) return workerByToken(ctx.supervisor.workers, worker, key) ? { id: `worker ${worker}`, worker: true } : undefined;
    const upload = UPLOAD_ROUTE.exec(url);
    return byKey(key) ?? (upload ? byUploadToken(upload[1]!, upload[2]!) : undefined);
  };
}
