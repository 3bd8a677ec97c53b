/**
 * The audit log: each management action (deploy, rollback, undeploy, app and environment deletes,
 * key and secret changes, volume deletes) once, with the key that asked, the time, the app and how
 * it ended — "ok" or the refusal's catalogue code. The newest `retention` entries are kept.
 * docs/platform.md, "Audit".
 */
import { isSvcError } from "../../core/errors.ts";
import type { Store } from "../store/index.ts";

/** GraphQL mutation → the action it is recorded as. */
export const AUDITED: Readonly<Record<string, string>> = {
  deployBuildToEnvironment: "deploy",
  rollbackEnvironment: "rollback",
  deleteEndpoint: "undeploy",
  deleteEnvironment: "environment.delete",
  deleteApp: "app.delete",
  apiKeyCreate: "key.create",
  apiKeyRevoke: "key.revoke",
  secretCreate: "secret.create",
  secretDelete: "secret.delete",
  deleteNetworkVolume: "volume.delete",
};

export interface AuditEntry {
  keyName: string;
  action: string;
  app?: string;
  target?: string;
}

export interface Audit {
  record(entry: AuditEntry, outcome: string): void;
  /** Runs `action` and records how it ended (its error's code, rethrown). */
  around<T>(entry: AuditEntry, action: () => T | Promise<T>): Promise<T>;
}

export const outcomeOf = (error: unknown): string => (isSvcError(error) ? error.code : "INTERNAL");

export function createAudit(store: Store, retention: number): Audit {
  const record = (entry: AuditEntry, outcome: string) =>
    store.audit.add({ at: Date.now(), keyName: entry.keyName, action: entry.action, app: entry.app ?? null, target: entry.target ?? null, outcome }, retention);
  return {
    record,
    async around(entry, action) {
      try {
        const result = await action();
        record(entry, "ok");
        return result;
      } catch (error) {
        record(entry, outcomeOf(error));
        throw error;
      }
    },
  };
}
