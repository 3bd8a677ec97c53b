/**
 * The build the dev server serves. A (re)build that succeeds replaces it as a whole; a failed one
 * leaves it serving. Routes, health and the banner read it.
 */
import type { BuildContext, Manifest } from "../core/types.ts";
import { buildRouteTable, type RouteTable } from "./routes/routes-table.ts";

export class CurrentBuild {
  manifest!: Manifest;
  table!: RouteTable;
  buildId!: string;
  artifactSha!: string;

  adopt(ctx: BuildContext): void {
    this.manifest = ctx.manifest!;
    this.table = buildRouteTable(this.manifest);
    this.buildId = ctx.buildId!;
    this.artifactSha = ctx.artifact!.sha256;
  }
}
