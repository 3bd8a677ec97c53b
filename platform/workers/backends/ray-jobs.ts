/**
 * Ray's REST Jobs API and state API (the head's dashboard port, 8265 by default), from Node with
 * undici: submit a job with its entrypoint resources, read its status, stop it, list the nodes.
 * Written against Ray 2.60 (`GET /api/version`: version "4"); no Ray client library is needed on
 * the platform's machine. https://docs.ray.io/en/latest/cluster/running-applications/job-submission/rest.html
 */
import { request } from "undici";
import { errors } from "../../../core/errors.ts";

export type RayJobStatus = "PENDING" | "RUNNING" | "STOPPED" | "SUCCEEDED" | "FAILED";
export const RAY_FINAL: ReadonlySet<RayJobStatus> = new Set(["STOPPED", "SUCCEEDED", "FAILED"]);

export interface RayJobRequest {
  submissionId: string;
  entrypoint: string;
  envVars: Record<string, string>;
  numCpus: number;
  numGpus: number;
  /** Bytes; 0: none reserved. */
  memoryBytes: number;
  metadata: Record<string, string>;
}

export interface RayJob {
  status: RayJobStatus;
  message: string | null;
  /** The node whose supervisor runs the entrypoint (Ray chose it). */
  driverNodeId: string | null;
  exitCode: number | null;
}

export interface RayNode {
  id: string;
  ip: string;
  alive: boolean;
  head: boolean;
  total: Record<string, number>;
}

const TIMEOUTS = { headersTimeout: 15_000, bodyTimeout: 15_000 };

export class RayJobsApi {
  constructor(readonly address: string) {}

  private async call(method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; value: any }> {
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(`${this.address}${path}`, {
        method,
        ...TIMEOUTS,
        headers: body ? { "content-type": "application/json" } : {},
        body: body ? JSON.stringify(body) : undefined,
      });
    } catch (error) {
      throw errors.RAY_UNREACHABLE(this.address, (error as Error).message);
    }
    const text = await res.body.text();
    let value: unknown = text;
    try {
      value = JSON.parse(text);
    } catch {
      /* Ray answers some errors as text */
    }
    return { status: res.statusCode, value };
  }

  /** The cluster's Ray version; RAY_UNREACHABLE when nothing answers there as Ray's dashboard. */
  async version(): Promise<string> {
    const { status, value } = await this.call("GET", "/api/version");
    if (status !== 200 || typeof value?.ray_version !== "string") throw errors.RAY_UNREACHABLE(this.address, `GET /api/version answered ${status}`);
    return value.ray_version;
  }

  async submit(job: RayJobRequest): Promise<void> {
    const { status, value } = await this.call("POST", "/api/jobs/", {
      submission_id: job.submissionId,
      entrypoint: job.entrypoint,
      runtime_env: { env_vars: job.envVars },
      metadata: job.metadata,
      entrypoint_num_cpus: job.numCpus,
      entrypoint_num_gpus: job.numGpus,
      ...(job.memoryBytes > 0 ? { entrypoint_memory: job.memoryBytes } : {}),
    });
    if (status !== 200)
      throw errors.RAY_UNREACHABLE(
        this.address,
        `submitting job ${job.submissionId} answered ${status}: ${typeof value === "string" ? value : JSON.stringify(value)}`,
      );
  }

  /** The job's status; undefined when Ray does not know it. */
  async job(submissionId: string): Promise<RayJob | undefined> {
    const { status, value } = await this.call("GET", `/api/jobs/${encodeURIComponent(submissionId)}`);
    if (status === 404) return undefined;
    if (status !== 200) throw errors.RAY_UNREACHABLE(this.address, `GET job ${submissionId} answered ${status}`);
    return { status: value.status, message: value.message ?? null, driverNodeId: value.driver_node_id ?? null, exitCode: value.driver_exit_code ?? null };
  }

  /** Asks Ray to stop the job (SIGTERM to its entrypoint, SIGKILL after Ray's grace period). */
  async stop(submissionId: string): Promise<void> {
    const { status } = await this.call("POST", `/api/jobs/${encodeURIComponent(submissionId)}/stop`);
    if (status !== 200 && status !== 404) throw errors.RAY_UNREACHABLE(this.address, `stopping job ${submissionId} answered ${status}`);
  }

  /** Every submitted job Ray keeps (its submission id, status and metadata). */
  async jobs(): Promise<Array<{ submissionId: string; status: RayJobStatus; metadata: Record<string, string> }>> {
    const { status, value } = await this.call("GET", "/api/jobs/");
    if (status !== 200 || !Array.isArray(value)) throw errors.RAY_UNREACHABLE(this.address, `GET /api/jobs/ answered ${status}`);
    return (value as Array<Record<string, any>>)
      .filter((j) => j.submission_id)
      .map((j) => ({ submissionId: j.submission_id, status: j.status, metadata: j.metadata ?? {} }));
  }

  /** Every node Ray knows (dead ones too), with its total resources. */
  async nodes(): Promise<RayNode[]> {
    const { status, value } = await this.call("GET", "/api/v0/nodes?detail=1&limit=10000");
    if (status !== 200) throw errors.RAY_UNREACHABLE(this.address, `GET /api/v0/nodes answered ${status}`);
    const rows = (value?.data?.result?.result ?? []) as Array<Record<string, any>>;
    return rows.map((n) => ({ id: n.node_id, ip: n.node_ip, alive: n.state === "ALIVE", head: Boolean(n.is_head_node), total: n.resources_total ?? {} }));
  }
}
