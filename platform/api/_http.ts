/** Small helpers of the HTTP layer: JSON answers, errors as `{"error"}`, bodies read with a limit. */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readResultLines, type ResultLines } from "./result-lines.ts";
import { isUtf8 } from "node:buffer";
import { type HTTPError, HTTPResponse, type H3Event } from "h3";
import { errors, isSvcError } from "../../core/errors.ts";
import { errorReply, thrownBy, type Reply } from "../../core/http-errors.ts";
import { parseJson, type ParsedJson } from "./_json.ts";

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

/** An answer h3 turns into srvx's fast response (no web Response object per request). */
export type Answer = HTTPResponse | Response;

export const jsonText = (status: number, text: string, headers?: Record<string, string>): HTTPResponse =>
  new HTTPResponse(text, { status, headers: headers ? { ...JSON_HEADERS, ...headers } : JSON_HEADERS });

export const json = (status: number, value: unknown): HTTPResponse => jsonText(status, JSON.stringify(value));

export const noContent = (): HTTPResponse => new HTTPResponse(null, { status: 204 });

/** A JSON answer as its status and text: the hot path writes it to Node itself, h3 routes wrap it (`answer`). */
export type { Reply };
export { errorReply };

export const answer = (reply: Reply): HTTPResponse => jsonText(reply.status, reply.text, reply.headers);

export const errorResponse = (error: unknown, log?: (line: string) => void): HTTPResponse => answer(errorReply(error, log));

/**
 * The h3 app's `onError`: the one place an h3 route's error becomes its answer. A route throws
 * (a catalogue error, or anything else: 500, logged); h3 wraps what it did not make in an
 * HTTPError whose `cause` is the thrown error, which errorReply (core/http-errors.ts) answers as
 * `{"error", "code"}` with its status.
 */
export const onRouteError =
  (log: (line: string) => void) =>
  (error: HTTPError): HTTPResponse =>
    errorResponse(thrownBy(error), log);

/**
 * What a route's logic needs of its request, from an h3 event (`exchangeOf`) or straight from
 * Node's request on the hot path (hot-routes.ts): one implementation of the route for both.
 */
export interface Exchange {
  /** The API key or worker token presented (`Authorization`). */
  key(): string | undefined;
  query(name: string): string | null;
  /** The body as text; 413 over `limit`, 400 when it cannot be read. */
  text(limit: number): Promise<string>;
  /** jobs-done's body: its text within `limit`, else the job ids leading its lines (./result-lines.ts). */
  resultLines(limit: number): Promise<ResultLines>;
  /** Calls `fn` once if the client goes away before its answer; answers how to stop listening. */
  onGone(fn: () => void): () => void;
  /** The W3C `traceparent` header, if sent (docs/observability.md). */
  traceparent(): string | undefined;
}

export const exchangeOf = (event: H3Event): Exchange => ({
  key: () => presentedKey(event),
  query: (name) => queryParam(event, name),
  text: (limit) => readText(event, limit),
  resultLines: (limit) => {
    const node = event.runtime?.node?.req as IncomingMessage | undefined;
    return node ? readResultLines(node, limit) : readText(event, limit).then((text) => ({ text }));
  },
  onGone: (fn) => onClientGone(event, fn),
  traceparent: () => event.req.headers.get("traceparent") ?? undefined,
});

/** The API key or worker token an h3 request presents; see keyOf. */
export function presentedKey(event: H3Event): string | undefined {
  return keyOf(event.req.headers.get("authorization"));
}

/** The key from an `Authorization` header: `Bearer <key>`, or the bare key. */
export function keyOf(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  // Fast path (every worker and API request): exactly `Bearer <key>`, nothing to trim.
  if (header.startsWith("Bearer ") && header.charCodeAt(7) > 32 && header.charCodeAt(header.length - 1) > 32) return header.slice(7);
  const value = header.trim();
  const m = /^bearer\s+(.+)$/i.exec(value);
  return (m ? m[1]! : value).trim() || undefined;
}

/**
 * A body's bytes as text, only when they are valid UTF-8: decoding would replace each bad byte with
 * U+FFFD and change what the client sent without a word (docs/platform.md, "Limits").
 */
export function utf8Text(bytes: Buffer): string {
  if (!isUtf8(bytes)) throw errors.BODY_NOT_UTF8();
  return bytes.toString("utf8");
}

/** A body with no content-length (chunked), counted as it arrives. */
async function readLimited(event: H3Event, limit: number): Promise<Buffer> {
  const body = event.req.body;
  if (!body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) throw errors.PAYLOAD_TOO_LARGE(limit);
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

/** The body as text; 413 over `limit`, 400 when the client's body cannot be read (aborted, short) or is not UTF-8. */
export async function readText(event: H3Event, limit: number): Promise<string> {
  // Straight from Node's request: srvx answers `arrayBuffer()` by building a web Request and stream
  // per body, which doubled the platform's CPU per /run job.
  const node = event.runtime?.node?.req;
  if (node) return readNodeText(node as IncomingMessage, limit); // the platform serves HTTP/1 only
  try {
    const length = event.req.headers.get("content-length");
    if (length === null) return utf8Text(await readLimited(event, limit));
    if (Number(length) > limit) throw errors.PAYLOAD_TOO_LARGE(limit);
    return utf8Text(Buffer.from(await event.req.arrayBuffer()));
  } catch (error) {
    if (isSvcError(error)) throw error;
    throw errors.BAD_REQUEST(`The request body could not be read: ${(error as Error)?.message ?? error}`);
  }
}

/** A request body's text parsed as JSON within the nesting limit (empty: `undefined`); 400 when malformed. */
export const parseBody = (text: string): ParsedJson | undefined => (text.trim() === "" ? undefined : parseJson(text, "The request body"));

/** The body's JSON value (an empty body is `undefined`); 413 over `limit`, 400 when malformed. */
export async function readJson(event: H3Event, limit: number): Promise<unknown> {
  return parseBody(await readText(event, limit))?.value;
}

export function queryParam(event: H3Event, name: string): string | null {
  return event.url.search === "" ? null : event.url.searchParams.get(name); // most requests have no query: no URLSearchParams
}

/**
 * Calls `fn` once if the client goes away before its answer is sent; answers how to stop
 * listening. On Node it listens to the response's close event: `event.req.signal` would build an
 * AbortController per request (docs/platform.md, "Hot path").
 */
export function onClientGone(event: H3Event, fn: () => void): () => void {
  const res = event.runtime?.node?.res;
  if (!res) {
    const signal = event.req.signal;
    signal.addEventListener("abort", fn, { once: true });
    return () => signal.removeEventListener("abort", fn);
  }
  return onResponseClosed(res, fn);
}

type ClosableResponse = Pick<ServerResponse, "destroyed" | "writableEnded"> & {
  once(event: "close", listener: () => void): unknown;
  off(event: "close", listener: () => void): unknown;
};

/** Node's side of onClientGone: the response closed before it was ended. */
export function onResponseClosed(res: ClosableResponse, fn: () => void): () => void {
  if (res.destroyed) {
    fn();
    return NOTHING;
  }
  const onClose = () => {
    if (!res.writableEnded) fn();
  };
  res.once("close", onClose);
  return () => res.off("close", onClose);
}

const NOTHING = () => {};

/** readText for a request straight from Node (the hot path): the same limits and errors. */
export function readNodeText(req: IncomingMessage, limit: number): Promise<string> {
  const length = req.headers["content-length"];
  if (length !== undefined && Number(length) > limit) return Promise.reject(errors.PAYLOAD_TOO_LARGE(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (error: unknown) => {
      req.off("data", onData);
      reject(isSvcError(error) ? error : errors.BAD_REQUEST(`The request body could not be read: ${(error as Error)?.message ?? error}`));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        req.resume(); // drain the rest: the answer still goes out on this connection
        fail(errors.PAYLOAD_TOO_LARGE(limit));
      } else chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => {
      try {
        resolve(utf8Text(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
      } catch (error) {
        reject(error);
      }
    });
    req.once("error", fail);
    req.once("close", () => {
      if (!req.complete) fail(new Error("the client closed the connection"));
    });
  });
}
