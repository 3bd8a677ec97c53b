/**
 * svc:gpu-image — picks each endpoint's container image: the GPU base image (PyTorch) for
 * endpoints with gpuIds, the slim CPU image otherwise (load-balanced endpoints follow their own
 * gpu/cpu setting). Images come from config `images`. An image set by an earlier tap is kept.
 */
import type { EndpointSpec, ImageConfig, SvcPlugin } from "../core/types.ts";
import { PREINSTALLED } from "./exclude-preinstalled.ts";

export const PLUGIN_NAME = "svc:gpu-image";

export function gpuImage(): SvcPlugin {
  return {
    name: PLUGIN_NAME,
    apply(pipeline) {
      pipeline.hooks.group.tapPromise(PLUGIN_NAME, async (endpoints, ctx) => {
        for (const endpoint of endpoints) endpoint.image ??= imageFor(endpoint, ctx.config.images);
        return endpoints;
      });
    },
  };
}

export type ImageKind = keyof ImageConfig;

export const imageKindOf = (endpoint: Pick<EndpointSpec, "hardware">): ImageKind => (endpoint.hardware.gpuIds?.length ? "gpu" : "cpu");

export const imageFor = (endpoint: Pick<EndpointSpec, "hardware">, images: ImageConfig): string => images[imageKindOf(endpoint)];

/**
 * What each base image has installed beyond the stdlib, as import names: the GPU (PyTorch) image
 * has the spec's pre-installed set (8.1), the slim CPU image nothing. docs/deploy.md says how the
 * embedded platform emulates each.
 */
export const IMAGE_PACKAGES: Record<ImageKind, readonly string[]> = {
  gpu: PREINSTALLED,
  cpu: [],
};
