// Starting and stopping one sitefleet process, written once for every command that serves (serve, mcp, demo) and
// for the tests: open the store and services, build the registry, listen when asked, start the job runner; and the
// reverse, in order, once.
import { buildRegistry, type FleetRegistry } from '../abilities/index.js';
import type { Config } from '../config.js';
import type { HttpOptions, RunningHttp } from './http.js';
import { closeServices, openServices, startMonitoring, type Services } from '../domain/index.js';

export interface BootOptions {
  /** Serve the HTTP doors on the config's host and port (or this port; 0 picks a free one). */
  http?: HttpOptions & { port?: number };
  /** How often the job runner looks for work, in ms (the default suits a server; tests go faster). */
  jobTickMs?: number;
  /** Run the scheduled uptime checks and webhook deliveries (serve does). */
  monitoring?: boolean;
}

export interface Running {
  services: Services;
  registry: FleetRegistry;
  http?: RunningHttp;
  /** Stops taking requests (up to graceMs for those in flight), stops the job runner, flushes and closes the store. */
  close(graceMs?: number): Promise<void>;
}

export async function boot(given: Config, opts: BootOptions = {}): Promise<Running> {
  // Immutable from here on: loadConfig freezes what it reads; a config built by hand is copied and frozen.
  const config = Object.isFrozen(given) ? given : Object.freeze({ ...given });
  const services = await openServices(config);
  const registry = buildRegistry(services);
  let http: RunningHttp | undefined;
  try {
    // The HTTP doors (express, the MCP SDK's HTTP transport) are loaded only by a process that serves them: a stdio MCP
    // server starts without them.
    if (opts.http) {
      const { listen } = await import('./http.js');
      http = await listen(services, registry, config.host, opts.http.port ?? config.port, opts.http);
    }
  } catch (e) {
    await closeServices(services);
    throw e;
  }
  services.jobs.start(opts.jobTickMs);
  if (opts.monitoring) startMonitoring(services);
  let closing: Promise<void> | undefined;
  const close = (graceMs = 10_000) =>
    (closing ??= (async () => {
      await Promise.all([http?.close(graceMs), services.jobs.stop()]);
      await closeServices(services);
    })());
  return { services, registry, http, close };
}
