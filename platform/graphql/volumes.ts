/** Resolvers of the network volumes (createNetworkVolume, updateNetworkVolume, deleteNetworkVolume, s3Credentials): docs/volumes.md. */
import { mkdir, rm, rmdir } from "node:fs/promises";
import { errors } from "../../core/errors.ts";
import type { PlatformContext } from "../context.ts";
import type { VolumeRecord } from "../store/index.ts";
import { newId } from "../_ids.ts";
import { uploadDir, volumeDir } from "../volumes/paths.ts";
import { s3Credentials } from "../volumes/credentials.ts";
import { deleteVolumeFolder } from "../volumes/volume-fs.ts";
import { S3_PREFIX } from "../volumes/s3-handler.ts";
import { createDisk, deleteDisk, diskSupport, growDisk } from "../volumes/volume-disk.ts";
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
      const record = store.volumes.create({
        id: newId("vol", 16),
        name: v.name,
        sizeGb: v.size,
        dataCenterId: v.dataCenterId ?? DEFAULT_DATA_CENTER,
        createdAt: Date.now(),
      });
      // World-writable: the workers that mount it may run as another user than the platform (docs/volumes.md).
      const dir = volumeDir(ctx.options.dataDir, record.id);
      await mkdir(dir, { recursive: true, mode: 0o777 });
      // Its size holds for every writer where it can be an image (../volumes/volume-disk.ts); else the S3 API's check alone.
      if (diskSupport().ok) {
        await createDisk(ctx.options.dataDir, record.id, record.sizeGb, dir).catch(async (error) => {
          store.volumes.remove(record.id);
          await rmdir(dir).catch(() => undefined);
          throw error;
        });
      }
      return volumeView(record);
    },
    updateNetworkVolume: async ({ input }: Record<string, unknown>) => {
      const v = parseInput(updateVolumeSchema, input, "network volume input");
      const existing = store.volumes.get(v.id) ?? store.volumes.byName(v.id);
      if (!existing) throw errors.VOLUME_NOT_FOUND(v.id);
      if (v.name && v.name !== existing.name && store.volumes.byName(v.name)) throw errors.VOLUME_EXISTS(v.name);
      if (v.size && v.size > existing.sizeGb) {
        const dir = volumeDir(ctx.options.dataDir, existing.id);
        const release = async () => {
          for (const e of users(existing.id)) await ctx.supervisor.stopEndpoint(e.id);
        };
        const grown = await growDisk(ctx.options.dataDir, existing.id, v.size, dir, release);
        if (!grown)
          ctx.options.log(
            `volume ${existing.name}: something still holds it, so its image grows to ${v.size} GB at the next platform start (the S3 API holds the new size now)`,
          );
      }
      store.volumes.update(existing.id, v.name ?? existing.name, v.size ?? existing.sizeGb);
      return volumeView(store.volumes.get(existing.id)!);
    },
    deleteNetworkVolume: async ({ input }: Record<string, unknown>) => {
      const v = parseInput(deleteVolumeSchema, input, "delete network volume input");
      const volume = store.volumes.get(v.id);
      if (!volume) return false;
      const attached = users(volume.id);
      if (attached.length > 0 && !v.force)
        throw errors.VOLUME_IN_USE(
          volume.name,
          attached.map((e) => e.name),
        );
      for (const e of attached) {
        store.endpoints.save({ ...e, networkVolumeId: null });
        endpointChanged(e.id);
      }
      for (const u of store.volumes.uploads(volume.id)) await rm(uploadDir(ctx.options.dataDir, u.id), { recursive: true, force: true });
      store.volumes.remove(volume.id);
      await deleteDisk(ctx.options.dataDir, volume.id, volumeDir(ctx.options.dataDir, volume.id));
      await deleteVolumeFolder(volumeDir(ctx.options.dataDir, volume.id));
      return true;
    },
    s3Credentials: () => ({ ...s3Credentials(store), endpointUrl: `${ctx.baseUrl()}${S3_PREFIX}` }),
  };
}
