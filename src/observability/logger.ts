import type { BalancerEventSource } from './events.ts';

/**
 * A pino-style log method. The balancer always calls it as `(fields, message)`: pino, bunyan and
 * winston's pino-compatible loggers read that natively, and `console` prints the fields then the
 * message. A logger whose methods only take `(message)` still gets the message, second.
 */
export type LogFn = (fields: Record<string, unknown>, message?: string) => void;

/** What `options.logger` must have: pino's and console's level methods. */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

export function isLogger(value: unknown): value is Logger {
  if (typeof value !== 'object' || value === null) return false;
  const logger = value as Record<string, unknown>;
  return ['debug', 'info', 'warn', 'error'].every((level) => typeof logger[level] === 'function');
}

/**
 * Logs the balancer's events: what changes where requests go at info/warn, each retry at debug.
 * Fields name the event and the endpoint (`address:port`), so logs can be filtered without parsing
 * messages. It listens like any user would, so an unset logger costs nothing.
 */
export function attachLogger(balancer: BalancerEventSource, logger: Logger): void {
  balancer.on('endpoints', (endpoints) =>
    logger.info({ event: 'endpoints', endpoints: endpoints.map((e) => e.key) }, `apiserver endpoints: ${endpoints.length}`),
  );
  balancer.on('eject', (endpoint, reason, durationMs) =>
    logger.warn({ event: 'eject', endpoint: endpoint.key, reason, durationMs: Math.round(durationMs) }, `endpoint ${endpoint.key} ejected (${reason})`),
  );
  balancer.on('restore', (endpoint, via) => logger.info({ event: 'restore', endpoint: endpoint.key, via }, `endpoint ${endpoint.key} restored`));
  balancer.on('drain', (endpoint, reason) =>
    logger.warn({ event: 'drain', endpoint: endpoint.key, reason }, `endpoint ${endpoint.key} draining (${reason === 'shutdown' ? 'apiserver shutting down' : 'failing probe'})`),
  );
  balancer.on('rebalance', ({ from, to }) =>
    logger.info({ event: 'rebalance', from: from.key, to: to.key }, `watch on ${from.key} ended so that it re-opens where fewer are (${to.key})`),
  );
  balancer.on('retry', ({ from, to, reason, attempt }) =>
    logger.debug({ event: 'retry', from: from.key, to: to.key, reason, attempt }, `retrying on ${to.key} after ${reason} at ${from.key}`),
  );
  balancer.on('resolver-error', (error) =>
    logger.warn({ event: 'resolver-error', err: error }, `resolution failed, keeping the previous endpoints: ${error.message}`),
  );
  balancer.on('warning', (message) => logger.warn({ event: 'warning' }, message));
}
