/**
 * A TCP proxy in front of a ClickHouse HTTP interface that can lose the answer of an insert or hold inserts
 * back: faults a real server cannot be made to show on demand (a connection that breaks after the server
 * stored a block, a server slow to answer). Everything else passes through byte for byte.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface InsertProxy {
  readonly url: string;
  /** Insert requests seen so far. */
  readonly inserts: number;
  /** Insert requests held back now (see `holdInserts`). */
  readonly held: number;
  /** The next insert reaches the server, and its answer is dropped with the connection. */
  cutNextInsertAnswer(): void;
  /** Holds every insert request back until the function returned is called. */
  holdInserts(): () => void;
  close(): Promise<void>;
}

/** An insert of @clickhouse/client: its statement is the `query` parameter of the request line. */
const INSERT_REQUEST = /^POST [^ ]*[?&]query=INSERT/i;

export async function startInsertProxy(target: string): Promise<InsertProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let inserts = 0;
  let cutNext = false;
  let holding: Promise<void> | undefined;
  let held = 0;

  const server: Server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client);
    sockets.add(upstream);
    let cut = false;
    // Requests of one keep-alive connection follow one another: this one's first bytes decide for it.
    let chain = Promise.resolve();
    client.on('data', (chunk: Buffer) => {
      const isInsert = INSERT_REQUEST.test(chunk.toString('latin1', 0, 512));
      if (isInsert) {
        inserts++;
        if (cutNext) {
          cutNext = false;
          cut = true;
        }
      }
      const gate = isInsert && holding ? holding : undefined;
      if (gate) held++;
      chain = chain.then(async () => {
        if (gate) {
          client.pause();
          await gate;
          held--;
          client.resume();
        }
        upstream.write(chunk);
      });
    });
    upstream.on('data', (chunk: Buffer) => {
      // The server has answered (so it has stored the block): the client never hears of it.
      if (cut) {
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    get inserts() {
      return inserts;
    },
    get held() {
      return held;
    },
    cutNextInsertAnswer: () => {
      cutNext = true;
    },
    holdInserts: () => {
      let release = (): void => undefined;
      holding = new Promise<void>((resolve) => (release = resolve));
      return () => {
        holding = undefined;
        release();
      };
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
