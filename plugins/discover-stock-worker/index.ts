/**
 * svc:discover-stock-worker — a folder written for the hosted platform's own worker SDK (a
 * `handler.py` that calls `runpod.serverless.start({"handler": ...})`, a requirements.txt, often a
 * Dockerfile) becomes one queue-based endpoint that runs it unmodified under that SDK (docs/deploy.md,
 * "Stock workers"). Only where the app has no `@Endpoint` function: it taps discover before
 * svc:discover-python (which would say NO_ENDPOINTS) and takes its function back after, when that
 * found decorated ones. The start call is found with Python's own parser in the helper
 * (plugins/_python/helper/stock_worker.py), never by regexes nor by running the file.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { errors } from "../../core/errors.ts";
import type { BuildContext, DiscoveredFunction, StaticValue, StockWorkerConfig, SvcPlugin } from "../../core/types.ts";
import { modulePath, sharedParser, type PythonParser, type StockWorkerStart } from "../_python/index.ts";
import { readDockerfile, type DockerfileFacts } from "./dockerfile.ts";

export const PLUGIN_NAME = "svc:discover-stock-worker";
/** Where such workers keep their handler, in the order looked at. */
export const STOCK_WORKER_FILES = ["handler.py", "src/handler.py", "rp_handler.py"];
const DISCOVER_PYTHON = "svc:discover-python";

export interface DiscoverStockWorkerOptions {
  parser?: PythonParser;
}

export function discoverStockWorker(options: DiscoverStockWorkerOptions = {}): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.discover.tapPromise({ name: PLUGIN_NAME, before: DISCOVER_PYTHON }, async (functions, ctx) => {
        const found = await findStockWorker(ctx, options.parser ?? sharedParser());
        return found ? [...functions, found] : functions;
      });
      pipeline.hooks.discover.tapPromise({ name: PLUGIN_NAME, stage: 1 }, async (functions, ctx) => {
        const stock = functions.filter((fn) => fn.runtime === "runpod");
        if (stock.length === 0 || stock.length === functions.length) return functions;
        ctx.logger.warn(
          `${stock[0]!.file} calls runpod.serverless.start, but the app has @Endpoint functions: it is deployed as an @Endpoint app and ${stock[0]!.file} is packed as a plain file.`,
        );
        return functions.filter((fn) => fn.runtime !== "runpod");
      });
    },
  };
}

/** The stock worker's function, or undefined when the folder has none. */
async function findStockWorker(ctx: BuildContext, parser: PythonParser): Promise<DiscoveredFunction | undefined> {
  const config = ctx.config.stockWorker;
  const named = config?.file;
  for (const file of named ? [named] : STOCK_WORKER_FILES) ctx.dependencies.files.add(join(ctx.root, file));
  const candidates = named ? [named] : STOCK_WORKER_FILES.filter((file) => existsSync(join(ctx.root, file)));
  if (named && !existsSync(join(ctx.root, named))) throw errors.STOCK_WORKER_NOT_FOUND(named, "there is no such file");
  if (candidates.length === 0) return undefined;
  const analyses = await parser.stockWorkers(candidates.map((path) => ({ path, source: readFileSync(join(ctx.root, path)) })));
  for (const analysis of analyses) {
    if (analysis.error) {
      if (named) throw errors.PYTHON_SYNTAX({ file: analysis.path, line: analysis.error.line }, analysis.error.message);
      continue; // discover-python reports it with the other files
    }
    if (analysis.start) return stockFunction(ctx, analysis.path, analysis.start, config ?? {});
  }
  if (named) throw errors.STOCK_WORKER_NOT_FOUND(named, "it does not call runpod.serverless.start(...) at module level");
  return undefined;
}

function stockFunction(ctx: BuildContext, file: string, start: StockWorkerStart, config: StockWorkerConfig): DiscoveredFunction {
  const docker = dockerfileOf(ctx);
  const args = endpointArgs(ctx, config, docker);
  const line = start.handlerLine ?? start.line;
  ctx.logger.info(`${file}:${start.line}: a stock hosted-SDK worker (runpod.serverless.start): endpoint "${String(args.name)}", run by the SDK itself`);
  return {
    name: start.handler ?? "handler",
    file,
    line,
    module: modulePath(file),
    isAsync: start.isAsync ?? false,
    isGenerator: start.isGenerator ?? false,
    declaration: { file, line: start.line, args },
    runtime: "runpod",
  };
}

/** The Endpoint arguments (docs/contracts.md §3): svc.config.ts's stockWorker, the Dockerfile's ENV and pip packages under it. */
function endpointArgs(ctx: BuildContext, config: StockWorkerConfig, docker: DockerfileFacts | undefined): Record<string, StaticValue> {
  const args: Record<string, StaticValue> = { name: config.name ?? ctx.config.app };
  const set = (key: string, value: StaticValue | undefined) => {
    if (value !== undefined) args[key] = value;
  };
  set("cpu", config.cpu);
  set("gpu", config.gpu ?? (docker?.gpuBase && config.cpu === undefined ? "AMPERE_16" : undefined));
  set("gpu_count", config.gpuCount);
  set("workers", config.workers);
  set("idle_timeout", config.idleTimeout);
  set("scaler_type", config.scalerType);
  set("scaler_value", config.scalerValue);
  set("execution_timeout", config.executionTimeout);
  set("network", config.network);
  set("volume", config.volume);
  const env = { ...docker?.env, ...config.env };
  if (Object.keys(env).length > 0) args.env = env;
  if (docker?.packages.length) args.dependencies = docker.packages;
  return args;
}

/** The folder's Dockerfile read for what svc honours; what it does not is named in one warning. */
function dockerfileOf(ctx: BuildContext): DockerfileFacts | undefined {
  const path = join(ctx.root, "Dockerfile");
  ctx.dependencies.files.add(path);
  if (!existsSync(path)) return undefined;
  const facts = readDockerfile(readFileSync(path, "utf8"));
  const honoured = [
    facts.baseImage &&
      `base image ${facts.baseImage} → ${facts.gpuBase ? "a GPU worker (AMPERE_16 unless stockWorker.gpu or .cpu says otherwise)" : "svc's CPU image"}`,
    facts.packages.length && `pip install ${facts.packages.join(" ")} → dependencies`,
    Object.keys(facts.env).length && `ENV ${Object.keys(facts.env).join(", ")} → env`,
  ].filter(Boolean);
  if (honoured.length) ctx.logger.info(`Dockerfile: ${honoured.join("; ")}`);
  if (facts.ignored.length)
    ctx.logger.warn(
      `Dockerfile: svc builds no image, so these instructions are not carried out (install what they add through requirements.txt, or a network volume for files):\n  ${facts.ignored.join("\n  ")}`,
    );
  return facts;
}
