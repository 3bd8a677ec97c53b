/**
 * What the dev server says about itself: `GET /` (docs/dev-server.md, "Routes") and the ready
 * banner, both listing each endpoint's local paths and state.
 */
import { LIVE_PREFIX, type PlatformClient } from "../core/client/index.ts";
import type { CurrentBuild } from "./current-build.ts";
import type { Provisioner } from "./provisioning/provisioner.ts";
import type { ReloadReport } from "./reload.ts";
import { preferredAlias, type RouteTable } from "./routes/routes-table.ts";

export interface HealthSources {
  current: CurrentBuild;
  provisioner: Provisioner;
  client: Pick<PlatformClient, "url">;
  autoProvision: boolean;
  reload: boolean;
  lastReload(): ReloadReport | undefined;
}

/** The local paths that reach endpoint `name` (`POST /hello/runsync`, `GET /api/items`). */
export function endpointPaths(table: RouteTable, name: string): string[] {
  const paths: string[] = [];
  for (const entry of table.modules.values()) {
    const alias = preferredAlias(table, entry.module);
    for (const t of entry.qb) if (t.endpoint === name) paths.push(`POST /${alias}${entry.qb.length > 1 ? `/${t.function}` : ""}/runsync`);
    for (const r of entry.lb) if (r.endpoint === name) paths.push(`${r.method} /${alias}${r.path}`);
  }
  return paths;
}

export function healthReport(sources: HealthSources): Record<string, unknown> {
  const { current, provisioner } = sources;
  const lastReload = sources.lastReload();
  return {
    status: lastReload && !lastReload.ok ? "degraded" : "ok",
    app: current.manifest.app,
    platform: sources.client.url,
    mode: sources.autoProvision ? "auto-provision" : "lazy",
    reload: sources.reload,
    buildId: current.buildId,
    artifact: current.artifactSha,
    ...(lastReload ? { lastReload } : {}),
    endpoints: provisioner.status().map((s) => ({ ...s, module: current.manifest.endpoints[s.name]?.module, routes: endpointPaths(current.table, s.name) })),
  };
}

export function bannerLines(sources: HealthSources, url: string, readyIn: string): string[] {
  const lines = [
    `svc dev server ready in ${readyIn} at ${url}`,
    `  app ${sources.current.manifest.app} · platform ${sources.client.url} · ${sources.autoProvision ? "auto-provision" : "lazy provisioning"} · ${sources.reload ? "reload on" : "reload off"}`,
  ];
  for (const s of sources.provisioner.status()) {
    for (const path of endpointPaths(sources.current.table, s.name)) {
      const [method, route] = path.split(" ");
      lines.push(`  ${method!.padEnd(6)} ${url}${route}  → ${LIVE_PREFIX}${s.name} (${s.type}, ${s.state})`);
    }
  }
  lines.push(`  docs   ${url}/docs`);
  return lines;
}
