/**
 * Where a not-yet-deployed endpoint is reached in lazy mode: `/_svc/live/<endpoint>`, served by
 * routes/live-proxy.ts and recorded by provisioning/deploy-steps.ts (docs/dev-server.md,
 * "Cross-endpoint calls"); below both, so each reads it one way.
 */

export const LIVE_PROXY_PREFIX = "/_svc/live";

/** The URL recorded for an endpoint that is not deployed yet. */
export const liveProxyUrl = (devUrl: string, endpoint: string) => `${devUrl.replace(/\/+$/, "")}${LIVE_PROXY_PREFIX}/${encodeURIComponent(endpoint)}`;
