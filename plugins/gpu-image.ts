/**
 * svc:gpu-image — picks each endpoint's container image: the GPU base image (PyTorch) for
 * endpoints with gpuIds, the slim CPU image otherwise (load-balanced endpoints follow their own
 * gpu/cpu setting). Images come from config `images`. An image set by an earlier tap is kept.
 */
import { imageKindOf } from "../core/images.ts";
import type { EndpointSpec, ImageConfig, SvcPlugin } from "../core/types.ts";

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

export const imageFor = (endpoint: Pick<EndpointSpec, "hardware">, images: ImageConfig): string => images[imageKindOf(endpoint)];
