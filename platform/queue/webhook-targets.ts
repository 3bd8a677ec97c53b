/**
 * Where a webhook may go. The platform runs on the host's network: a webhook to loopback, a
 * link-local address or one of the host's own addresses would let a worker with no network
 * (`network=False`) reach the host's services by queuing a job of its own endpoint, the platform
 * POSTing the worker's output for it. Those addresses are refused unless the operator allows them
 * (`SVC_WEBHOOK_ALLOW`: a comma list of host names, addresses and CIDRs). The check is on the
 * address the connection is made to, resolved once: the connector dials that very address, so a
 * name that answers differently the next time (DNS rebinding) gains nothing. docs/platform.md, "Webhooks".
 */
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { Agent, buildConnector } from "undici";
import { errors } from "../../core/errors.ts";

/** What the operator allows beyond the public addresses: host names as written, addresses and CIDRs. */
export interface WebhookAllow {
  hosts: ReadonlySet<string>;
  addresses: BlockList;
}

/** Addresses only the host itself answers on, whatever its interfaces. */
const HOST_ONLY = new BlockList();
HOST_ONLY.addSubnet("127.0.0.0", 8, "ipv4"); // loopback
HOST_ONLY.addSubnet("0.0.0.0", 8, "ipv4"); // "this host": a connect to 0.0.0.0 reaches loopback
HOST_ONLY.addSubnet("169.254.0.0", 16, "ipv4"); // link-local (cloud metadata services among them)
HOST_ONLY.addAddress("::1", "ipv6");
HOST_ONLY.addAddress("::", "ipv6");
HOST_ONLY.addSubnet("fe80::", 10, "ipv6");

const familyOf = (address: string): "ipv4" | "ipv6" => (isIP(address) === 6 ? "ipv6" : "ipv4");
/** `::ffff:127.0.0.1` is 127.0.0.1. */
const unmapped = (address: string) => /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? address;
const bare = (hostname: string) => (hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname);

/** Parses `SVC_WEBHOOK_ALLOW`; WEBHOOK_ALLOW_INVALID names an entry that is neither a host name, an address nor a CIDR. */
export function parseWebhookAllow(text: string | undefined): WebhookAllow {
  const hosts = new Set<string>();
  const addresses = new BlockList();
  for (const raw of (text ?? "").split(",")) {
    const entry = bare(raw.trim().toLowerCase());
    if (!entry) continue;
    const [address, prefix, ...rest] = entry.split("/");
    if (prefix !== undefined) {
      const bits = Number(prefix);
      const max = isIP(address!) === 6 ? 128 : 32;
      if (rest.length > 0 || !isIP(address!) || !/^\d+$/.test(prefix) || bits > max) throw errors.WEBHOOK_ALLOW_INVALID(raw.trim());
      addresses.addSubnet(address!, bits, familyOf(address!));
    } else if (isIP(entry)) addresses.addAddress(entry, familyOf(entry));
    else if (/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(entry)) hosts.add(entry);
    else throw errors.WEBHOOK_ALLOW_INVALID(raw.trim());
  }
  return { hosts, addresses };
}

/** Why the platform will not POST to `address` (for `hostname`), or undefined when it may. */
export function webhookRefusal(hostname: string, resolved: string, allow: WebhookAllow): string | undefined {
  const address = unmapped(resolved);
  const family = familyOf(address);
  if (allow.hosts.has(bare(hostname).toLowerCase()) || allow.addresses.check(address, family)) return undefined;
  if (HOST_ONLY.check(address, family)) return `${address} is a loopback, link-local or unspecified address`;
  const own = Object.values(networkInterfaces()).some((list) => list?.some((i) => unmapped(i.address) === address));
  return own ? `${address} is one of this host's own addresses` : undefined;
}

/** The address `hostname` resolves to, once; WEBHOOK_REFUSED when it is the host's own and not allowed. */
export async function resolveWebhookTarget(hostname: string, allow: WebhookAllow): Promise<string> {
  const name = bare(hostname);
  const address = isIP(name) ? name : (await lookup(name)).address;
  const why = webhookRefusal(name, address, allow);
  if (why) throw errors.WEBHOOK_REFUSED(name, why);
  return address;
}

/**
 * The dispatcher webhooks are sent with: each connection dials the address its host name
 * resolved to after the check above (TLS still checks the certificate against the name).
 */
export function webhookDispatcher(allow: WebhookAllow, connectTimeoutMs: number): Agent {
  const connect = buildConnector({ timeout: connectTimeoutMs });
  return new Agent({
    connect: (options, callback) => {
      resolveWebhookTarget(options.hostname, allow).then(
        (address) => connect({ ...options, hostname: address }, callback),
        (error: Error) => callback(error, null),
      );
    },
  });
}
