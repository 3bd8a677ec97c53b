/**
 * Serving the h3 app with listhen 1.x. listhen takes a Node request listener (h3 v2's
 * `toNodeHandler(app)`). Given a plain port number, listhen (through get-port-please) falls back to
 * ports 3000–3100 or a random port, not to the next one; so the port goes in as
 * `{ port, portRange: [port + 1, port + PORT_ATTEMPTS], alternativePortRange: [], random: false }`:
 * the requested port, then the ones after it, nothing else. listhen's own SIGINT/SIGTERM handlers
 * (`autoClose`) would `process.exit(0)` before the `live-` endpoints are deleted: they are off.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler, type H3 } from "h3";
import { listen } from "listhen";
import { errors } from "../core/errors.ts";

/** Ports tried after the requested one. */
export const PORT_ATTEMPTS = 100;

export interface ServeOptions {
  host: string;
  /** 0: any free port. */
  port: number;
}

export interface Served {
  url: string;
  host: string;
  port: number;
  requestedPort: number;
  /** True when the requested port was taken and the next free one was used. */
  fallback: boolean;
  server: Server;
  close(): Promise<void>;
}

const isAnyHost = (host: string) => host === "0.0.0.0" || host === "::" || host === "[::]";

export async function serve(app: H3, options: ServeOptions): Promise<Served> {
  const { host, port } = options;
  const portOption =
    port === 0
      ? 0
      : { port, portRange: [port + 1, Math.min(65535, port + PORT_ATTEMPTS)] as [number, number], alternativePortRange: [] as number[], random: false };
  let listener: Awaited<ReturnType<typeof listen>>;
  try {
    listener = await listen(toNodeHandler(app) as Parameters<typeof listen>[0], {
      port: portOption as never,
      hostname: host,
      public: isAnyHost(host),
      showURL: false,
      autoClose: false,
      open: false,
      clipboard: false,
      qr: false,
      // Keeps get-port-please quiet: the dev server says itself which port it took.
      isTest: true,
    });
  } catch (error) {
    if ((error as Error)?.name === "GetPortError" || (error as NodeJS.ErrnoException)?.code === "EADDRINUSE") throw errors.PORT_IN_USE(port);
    throw error;
  }
  const server = listener.server as Server;
  const actual = (server.address() as AddressInfo).port;
  const shownHost = isAnyHost(host) ? "localhost" : host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${actual}`,
    host,
    port: actual,
    requestedPort: port,
    fallback: port !== 0 && actual !== port,
    server,
    async close() {
      server.closeAllConnections?.();
      await listener.close();
    },
  };
}
