import { ConfigError, type Config } from '../config/config.ts';
import { nodeTransport } from './node-transport.ts';
import type { Transport } from './transport.ts';
import { loadUws, uwsTransport } from './uws-transport.ts';

export interface ChosenTransport {
  readonly transport: Transport;
  /** Why this one, for the start-up log. */
  readonly reason: string;
}

let chosen: Map<Config['httpTransport'], ChosenTransport> | undefined;

/**
 * The HTTP transport of this process (or thread), chosen once: uWebSockets.js wherever its binary loads,
 * Node's `http` where it does not (a Node.js it has no build for) or when asked for by name. Asking for uWS
 * where it cannot load is refused rather than quietly served on the other.
 */
export function chooseTransport(choice: Config['httpTransport']): ChosenTransport {
  chosen ??= new Map();
  let found = chosen.get(choice);
  if (found === undefined) {
    found = choose(choice);
    chosen.set(choice, found);
  }
  return found;
}

function choose(choice: Config['httpTransport']): ChosenTransport {
  if (choice === 'node') return { transport: nodeTransport(), reason: 'WEIR_HTTP_TRANSPORT=node' };
  const loaded = loadUws();
  if ('uws' in loaded)
    return {
      transport: uwsTransport(loaded.uws),
      reason: choice === 'uws' ? 'WEIR_HTTP_TRANSPORT=uws' : 'its binary loads on this Node.js',
    };
  if (choice === 'uws') throw new ConfigError(`WEIR_HTTP_TRANSPORT=uws, but ${loaded.reason}`);
  return { transport: nodeTransport(), reason: `${loaded.reason}: serving HTTP on Node's http` };
}
