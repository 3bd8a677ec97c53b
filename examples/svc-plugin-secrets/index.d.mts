import type { SvcPlugin, z } from "@svc-dev/svc";

export interface SecretsOptions {
  /** App files (POSIX paths relative to the project) never scanned, e.g. test fixtures with fake keys. */
  allow?: string[];
  /** The file whose values must not ship; `.env` by default. */
  envFile?: string;
}

export declare const PLUGIN_NAME: "svc-plugin-secrets";
/** The options' schema: svc checks them with it (an unknown key names the closest one). */
export declare const optionsSchema: z.ZodType<Required<SecretsOptions>, SecretsOptions>;
export declare const SECRET_FOUND: "SECRET_FOUND";
export declare function findSecrets(text: string, env?: Array<[key: string, value: string]>): Array<{ line: number; what: string }>;

declare module "@svc-dev/svc/types" {
  interface PluginMeta {
    /** How many app files the scan read. */
    "svc-plugin-secrets": { scanned: number };
  }
}

declare const secrets: (options?: SecretsOptions) => SvcPlugin;
export default secrets;
