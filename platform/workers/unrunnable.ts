/**
 * Why no worker can ever start for an endpoint: it names a container image and no svc build (the
 * hosted SDK's create_template + create_endpoint), or more GPUs per worker than the machine has
 * (./gpu-assign.ts). Its jobs fail at once (the supervisor's failUnrunnable). An endpoint with
 * neither build nor image is still being set up: its jobs wait.
 */
import { errors } from "../../core/errors.ts";
import type { EndpointRecord, Store } from "../store/index.ts";
import type { WorkerGpus } from "./gpu-assign.ts";
import type { WorkerError } from "./worker-info.ts";

export function unrunnable(store: Store, gpus: WorkerGpus, endpoint: EndpointRecord): WorkerError | undefined {
  const gpu = gpus.unavailable(endpoint);
  if (gpu) return { error_type: gpu.code, error_message: gpu.message, remedy: gpu.remedy };
  if (endpoint.buildId || endpoint.environmentId) return undefined;
  const template = endpoint.templateId ? store.templates.get(endpoint.templateId) : undefined;
  const image = endpoint.imageName ?? template?.imageName;
  if (!image) return undefined; // neither build nor image yet: its jobs wait for a build (saveEndpoint with buildId)
  const error = errors.IMAGE_NOT_RUNNABLE(endpoint.name, image);
  return { error_type: error.code, error_message: error.message, remedy: error.remedy };
}
