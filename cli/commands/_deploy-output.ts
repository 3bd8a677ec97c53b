/** What `svc deploy` prints after a successful run: endpoints grouped by type, ready to call. */
import { nextRun, parseCron } from "../../core/cron.ts";
import { perJob } from "../../core/function-schema.ts";
import type { BuildContext, Manifest, Schedule } from "../../core/types.ts";

export interface DeploySummary {
  ok: true;
  platform: string;
  app: string;
  environment: string;
  buildId: string;
  uploadSkipped: boolean;
  endpoints: Array<{
    name: string;
    id: string;
    type: "QB" | "LB";
    url: string;
    /** QB: `{url}/runsync`. */
    runsync?: string;
    run?: string;
    /** QB with one function: its required parameters with placeholder values, for the curl line. */
    exampleInput?: Record<string, unknown>;
    /** LB: each declared route with its full URL. */
    routes?: Array<{ method: string; path: string; url: string; function: string }>;
    /** The network volume mounted at /platform-volume (its name). */
    volume?: string;
    /** `schedule=`: its cron expression, time zone and next run (ISO). */
    schedule?: Schedule & { nextRunAt: string | null };
  }>;
}

export function deploySummary(ctx: BuildContext, platformUrl: string): DeploySummary {
  const manifest = ctx.manifest as Manifest;
  return {
    ok: true,
    platform: platformUrl,
    app: ctx.app?.name ?? manifest.app,
    environment: ctx.environment?.name ?? "",
    buildId: ctx.buildId ?? "",
    uploadSkipped: ctx.upload?.skipped ?? false,
    endpoints: ctx.deployed.map((deployed) => {
      const { volume, schedule } = manifest.endpoints[deployed.name] ?? {};
      const endpoint = { ...deployed, ...(volume ? { volume } : {}), ...(schedule ? { schedule: { ...schedule, nextRunAt: nextRunAt(schedule) } } : {}) };
      return endpoint.type === "QB"
        ? { ...endpoint, runsync: `${endpoint.url}/runsync`, run: `${endpoint.url}/run`, exampleInput: exampleInput(manifest, endpoint.name) }
        : {
            ...endpoint,
            routes: (manifest.routes[endpoint.name] ?? []).map((route) => ({ ...route, url: `${endpoint.url}${route.path}` })),
          };
    }),
  };
}

/** When the schedule runs next from now (the platform keeps the same clock). */
export function nextRunAt(schedule: Schedule, now = Date.now()): string | null {
  const next = nextRun(parseCron(schedule.cron), now, schedule.timezone);
  return next === undefined ? null : new Date(next).toISOString();
}

/** `0 3 * * * (Europe/Paris), next 2026-11-29 03:00 (2026-11-29T02:00:00.000Z)`: local wall time first. */
export function describeSchedule(schedule: Schedule & { nextRunAt: string | null }): string {
  if (!schedule.nextRunAt) return `${schedule.cron} (${schedule.timezone}), never again`;
  const local = new Intl.DateTimeFormat("sv-SE", { timeZone: schedule.timezone, dateStyle: "short", timeStyle: "medium" }).format(new Date(schedule.nextRunAt));
  return `${schedule.cron} (${schedule.timezone}), next ${local} (${schedule.nextRunAt})`;
}

const PLACEHOLDERS: Record<string, unknown> = { str: "text", int: 1, float: 1.0, bool: true, list: [], dict: {} };

/** A runsync body that the endpoint's one function accepts: each required parameter with a placeholder by annotation. */
function exampleInput(manifest: Manifest, endpointName: string): Record<string, unknown> | undefined {
  const endpoint = manifest.endpoints[endpointName];
  const functions = endpoint?.functions ?? [];
  if (functions.length !== 1) return undefined;
  const required = (perJob(functions[0]!, Boolean(endpoint?.batch)).params ?? []).filter((param) => param.required && !param.kind.startsWith("var_"));
  return Object.fromEntries(required.map((param) => [param.name, PLACEHOLDERS[(param.annotation ?? "").replace(/\[.*$/, "")] ?? null]));
}

export function formatDeploySummary(summary: DeploySummary, keyVariable = "$PLATFORM_API_KEY"): string {
  const lines: string[] = [];
  lines.push(
    `Deployed ${summary.app} to environment ${summary.environment} on ${summary.platform} (build ${summary.buildId}${summary.uploadSkipped ? ", artifact unchanged: upload skipped" : ""})`,
  );
  const queue = summary.endpoints.filter((endpoint) => endpoint.type === "QB");
  const lb = summary.endpoints.filter((endpoint) => endpoint.type === "LB");
  if (queue.length) {
    lines.push("", "Queue-based endpoints");
    for (const endpoint of queue) {
      lines.push(`  ${endpoint.name}  ${endpoint.runsync}${endpoint.volume ? `  (volume ${endpoint.volume} at /platform-volume)` : ""}`);
      lines.push(
        `    curl -X POST ${endpoint.runsync} \\`,
        `      -H "Authorization: Bearer ${keyVariable}" -H "Content-Type: application/json" \\`,
        `      -d '${JSON.stringify({ input: endpoint.exampleInput ?? {} }).replace(/'/g, "'\\''")}'`,
      );
    }
  }
  const scheduled = queue.filter((endpoint) => endpoint.schedule);
  if (scheduled.length) {
    lines.push("", "Schedules (svc schedule list)");
    for (const endpoint of scheduled) lines.push(`  ${endpoint.name}  ${describeSchedule(endpoint.schedule!)}`);
  }
  if (lb.length) {
    lines.push("", "Load-balanced endpoints");
    for (const endpoint of lb) {
      lines.push(`  ${endpoint.name}  ${endpoint.url}${endpoint.volume ? `  (volume ${endpoint.volume} at /platform-volume)` : ""}`);
      const width = Math.max(0, ...(endpoint.routes ?? []).map((route) => route.method.length));
      for (const route of endpoint.routes ?? []) lines.push(`    ${route.method.padEnd(width)} ${route.url}`);
    }
  }
  return lines.join("\n");
}
