/**
 * Webhooks: POST of the final job body to the job's URL. The receiver must answer 200; otherwise
 * it is tried again up to `retries` more times, `delayMs` apart (hosted: 2 more, 10 s apart).
 * Never to the host's own addresses unless the operator allows them (./webhook-targets.ts): such a
 * delivery is refused at connect, once, not retried. Pending deliveries live in memory: a restart
 * of the platform drops them.
 */
import { request } from "undici";
import { isSvcError } from "../../core/errors.ts";
import { resolveWebhookTarget, webhookDispatcher, type WebhookAllow } from "./webhook-targets.ts";

export interface WebhookSender {
  send(url: string, body: string): void;
  /** Throws WEBHOOK_REFUSED when `url` resolves to an address webhooks may not go to (a name that does not resolve passes). */
  check(url: string): Promise<void>;
  /** Resolves when no delivery is in flight (tests). */
  idle(): Promise<void>;
  close(): void;
}

export function createWebhookSender(options: {
  retries: number;
  delayMs: number;
  timeoutMs?: number;
  allow: WebhookAllow;
  log: (line: string) => void;
}): WebhookSender {
  const dispatcher = webhookDispatcher(options.allow, options.timeoutMs ?? 10_000);
  const timers = new Set<NodeJS.Timeout>();
  let inFlight = 0;
  let idleWaiters: Array<() => void> = [];
  let closed = false;

  const settle = () => {
    if (--inFlight === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  };

  async function attempt(url: string, body: string, n: number): Promise<void> {
    let why: string;
    try {
      const res = await request(url, {
        dispatcher,
        method: "POST",
        body,
        headers: { "content-type": "application/json" },
        headersTimeout: options.timeoutMs ?? 10_000,
        bodyTimeout: options.timeoutMs ?? 10_000,
      });
      await res.body.dump();
      if (res.statusCode === 200) return settle();
      why = `HTTP ${res.statusCode}`;
    } catch (error) {
      why = String((error as Error)?.message ?? error);
      if (isSvcError(error) && error.code === "WEBHOOK_REFUSED") {
        options.log(`webhook ${url} not sent: ${why}`);
        return settle();
      }
    }
    if (n >= options.retries || closed) {
      options.log(`webhook ${url} failed after ${n + 1} attempt(s): ${why}`);
      return settle();
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      void attempt(url, body, n + 1);
    }, options.delayMs);
    timers.add(timer);
  }

  return {
    send(url, body) {
      if (closed) return;
      inFlight++;
      void attempt(url, body, 0);
    },
    async check(url) {
      try {
        await resolveWebhookTarget(new URL(url).hostname, options.allow);
      } catch (error) {
        if (isSvcError(error) && error.code === "WEBHOOK_REFUSED") throw error;
      }
    },
    idle: () => (inFlight === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
    close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      void dispatcher.close();
    },
  };
}
