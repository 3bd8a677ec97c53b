/** Resolvers of the network volumes (createNetworkVolume, updateNetworkVolume, deleteNetworkVolume, s3Credentials): docs/volumes.md. */
import { mkdir, rm } from "node:fs/promises";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { VolumeRecord } from "../store/index.ts";
import { newId } from "../_ids.ts";
import { uploadDir, volumeDir } from "../volumes/paths.ts";
import { s3Credentials } from "../volumes/credentials.ts";
import { deleteVolumeFolder } from "../volumes/volume-fs.ts";
import { S3_PREFIX } from "../volumes/s3-handler.ts";
import { createVolumeSchema, deleteVolumeSchema, parseInput, updateVolumeSchema } from "./inputs.ts";

/** The data centre of volumes created without one (the S3 region clients sign with). */
export const DEFAULT_DATA_CENTER = "local";

export const volumeView = (v: VolumeRecord) => ({ id: v.id, name: v.name, size: v.sizeGb, dataCenterId: v.dataCenterId });

export function volumeResolvers(ctx: PlatformContext, endpointChanged: (endpointId: string) => void) {
  const { store } = ctx;
  const users = (id: string) => store.endpoints.list().filter((e) => e.networkVolumeId === id);
  return {
    createNetworkVolume: async ({ input }: Record<string, unknown>) => {
      const v = parseInput(createVolumeSchema, input, "network volume input");
      if (store.volumes.byName(v.name)) throw errors.VOLUME_EXISTS(v.name);
      const record = store.volumes.create({ id: newId("vol", 16), name: v.name, sizeGb: v.size, dataCenterId: v.dataCenterId ?? DEFAULT_DATA_CENTER, createdAt: Date.now() });
      // World-writable: the workers that mount it may run as another user than the platform (docs/volumes.md).
      await mkdir(volumeDir(ctx.options.dataDir, record.id), { recursive: true, mode: 0o777 });
      return volumeView(record);
    },
    updateNetworkVolume: ({ input }: Record<string, unknown>) => {
      const v = parseInput(updateVolumeSchema, input, "network volume input");
      const existing = store.volumes.get(v.id) ?? store.volumes.byName(v.id);
      if (!existing) throw errors.VOLUME_NOT_FOUND(v.id);
      if (v.name && v.name !== existing.name && store.volumes.byName(v.name)) throw errors.VOLUME_EXISTS(v.name);
      store.volumes.update(existing.id, v.name ?? existing.name, v.size ?? existing.sizeGb);
      return volumeView(store.volumes.get(existing.id)!);
    },
    deleteNetworkVolume: async ({ input }: Record<string, unknown>) => {
      const v = parseInput(deleteVolumeSchema, input, "delete network volume input");
      const volume = store.volumes.get(v.id);
      if (!volume) return false;
      const attached = users(volume.id);
      if (attached.length > 0 && !v.force) throw errors.VOLUME_IN_USE(volume.name, attached.map((e) => e.name));
      for (const e of attached) {
        store.endpoints.save({ ...e, networkVolumeId: null });
        endpointChanged(e.id);
      }
      for (const u of store.volumes.uploads(volume.id)) await rm(uploadDir(ctx.options.dataDir, u.id), { recursive: true, force: true });
      store.volumes.remove(volume.id);
      await deleteVolumeFolder(volumeDir(ctx.options.dataDir, volume.id));
      return true;
    },
    s3Credentials: () => ({ ...s3Credentials(store), endpointUrl: `${ctx.baseUrl()}${S3_PREFIX}` }),
  };
}
