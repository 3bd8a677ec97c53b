/** The platform client's network volume calls (reference/platform-api.md section 3b; docs/volumes.md). */
import type { GraphQLRunner } from "./_graphql.ts";

export interface PlatformVolume {
  id: string;
  name: string;
  size: number;
  dataCenterId: string;
}
export interface S3Access {
  endpointUrl: string;
  accessKeyId: string;
  secretAccessKey: string;
}

const VOLUME_FIELDS = "id name size dataCenterId";
const documents = {
  list: `query networkVolumes { myself { networkVolumes { ${VOLUME_FIELDS} } } }`,
  create: `mutation createNetworkVolume($input: CreateNetworkVolumeInput!) { createNetworkVolume(input: $input) { ${VOLUME_FIELDS} } }`,
  remove: `mutation deleteNetworkVolume($input: DeleteNetworkVolumeInput!) { deleteNetworkVolume(input: $input) }`,
  s3: `query s3Credentials { s3Credentials { endpointUrl accessKeyId secretAccessKey } }`,
};

export interface VolumesApi {
  listVolumes(): Promise<PlatformVolume[]>;
  /** The volume with this name, or with this id; null when there is none. */
  findVolume(nameOrId: string): Promise<PlatformVolume | null>;
  createVolume(input: { name: string; size: number; dataCenterId?: string }): Promise<PlatformVolume>;
  deleteVolume(id: string, force?: boolean): Promise<boolean>;
  /**
   * The S3 API's endpoint and keys: PLATFORM_S3_ENDPOINT_URL / PLATFORM_S3_ACCESS_KEY_ID /
   * PLATFORM_S3_SECRET_ACCESS_KEY when set (the hosted platform's S3 keys come from its console),
   * else the platform's own (the embedded platform's `s3Credentials`).
   */
  s3Access(env?: NodeJS.ProcessEnv): Promise<S3Access>;
}

export function createVolumesApi(gql: GraphQLRunner): VolumesApi {
  return {
    async listVolumes(): Promise<PlatformVolume[]> {
      return (await gql<{ myself: { networkVolumes: PlatformVolume[] } }>("networkVolumes", documents.list)).myself.networkVolumes;
    },
    async findVolume(nameOrId: string): Promise<PlatformVolume | null> {
      const all = await this.listVolumes();
      return all.find((v) => v.name === nameOrId) ?? all.find((v) => v.id === nameOrId) ?? null;
    },
    async createVolume(input: { name: string; size: number; dataCenterId?: string }): Promise<PlatformVolume> {
      return (await gql<{ createNetworkVolume: PlatformVolume }>("createNetworkVolume", documents.create, { input })).createNetworkVolume;
    },
    async deleteVolume(id: string, force = false): Promise<boolean> {
      return (await gql<{ deleteNetworkVolume: boolean }>("deleteNetworkVolume", documents.remove, { input: { id, force } })).deleteNetworkVolume;
    },
    async s3Access(env: NodeJS.ProcessEnv = process.env): Promise<S3Access> {
      const { PLATFORM_S3_ENDPOINT_URL: endpointUrl, PLATFORM_S3_ACCESS_KEY_ID: accessKeyId, PLATFORM_S3_SECRET_ACCESS_KEY: secretAccessKey } = env;
      if (endpointUrl && accessKeyId && secretAccessKey) return { endpointUrl, accessKeyId, secretAccessKey };
      return (await gql<{ s3Credentials: S3Access }>("s3Credentials", documents.s3)).s3Credentials;
    },
  };
}
