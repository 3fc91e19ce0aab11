/**
 * Spawns a real `sightline serve` for the contract test: free loopback ports, a temporary data
 * directory, waits for `/ready`, stops it with SIGTERM (SIGKILL after 10 s) and removes the
 * directory. The binary comes from `SIGHTLINE_BIN` (default: the workspace's debug build).
 */
import { ChildProcess, spawn } from 'child_process';
import fs from 'fs';
import net from 'net';
import os from 'os';
import path from 'path';

/** The binary to test, and whether its absence must fail the run. */
export function binaryPath(): string {
  return process.env.SIGHTLINE_BIN ?? path.resolve(__dirname, '..', '..', '..', 'target', 'debug', 'sightline');
}

export function binaryRequired(): boolean {
  return process.env.SIGHTLINE_REQUIRE_BINARY === '1';
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export class SightlineServer {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly dir: string,
    private readonly log: () => string
  ) {}

  /** Starts a server; `tokens` (`TOKEN TENANT` lines) turns auth on. */
  static async start(tokens?: string): Promise<SightlineServer> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sightline-plugin-'));
    const [http, grpc] = [await freePort(), await freePort()];
    const args = ['serve', '--data-dir', path.join(dir, 'data'), '--http-addr', `127.0.0.1:${http}`];
    args.push('--grpc-addr', `127.0.0.1:${grpc}`, '--fsync', 'never', '--log-level', 'warn');
    if (tokens) {
      fs.writeFileSync(path.join(dir, 'tokens'), tokens);
      args.push('--auth-tokens-file', path.join(dir, 'tokens'));
    }
    let output = '';
    const child = spawn(binaryPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (d) => (output += d));
    child.stderr?.on('data', (d) => (output += d));
    const server = new SightlineServer(`http://127.0.0.1:${http}`, child, dir, () => output);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) {
        throw new Error(`sightline exited with ${child.exitCode}:\n${output}`);
      }
      try {
        const r = await fetch(`${server.url}/ready`);
        if (r.ok) {
          return server;
        }
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await server.stop();
    throw new Error(`sightline did not become ready in 30 s:\n${output}`);
  }

  /** POSTs OTLP/JSON and fails loudly on anything but 200. */
  async ingest(signal: 'traces' | 'metrics', body: unknown, headers: Record<string, string> = {}): Promise<void> {
    const r = await fetch(`${this.url}/v1/${signal}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    if (r.status !== 200 || text.includes('rejected')) {
      throw new Error(`ingest of ${signal} answered ${r.status}: ${text}`);
    }
  }

  output(): string {
    return this.log();
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
