// A WalFs over real files that can forget, at a simulated power loss, every
// byte written since the last fdatasync of its file (the page cache dies
// with the machine), and can make each fdatasync slow. Preallocation,
// zero-fills, repair and directory syncs are durable at once (they sync themselves).
import * as fs from 'node:fs';
import { nodeWalFs, type WalFile, type WalFs } from '../../src/wal/fs.js';

interface Undo {
  position: number;
  /** The bytes that were there before the write (shorter when it extended the file). */
  old: Buffer;
  /** The file's length before the write. */
  length: number;
}

class TrackedFile implements WalFile {
  undo: Undo[] = [];
  constructor(
    readonly owner: PowerLossFs,
    public path: string,
    readonly inner: WalFile,
  ) {}

  write(buf: Buffer, position: number): void {
    this.owner.alive();
    const length = fs.statSync(this.path).size;
    const old = Buffer.alloc(Math.max(0, Math.min(buf.length, length - position)));
    if (old.length > 0) {
      const fd = fs.openSync(this.path, 'r');
      fs.readSync(fd, old, 0, old.length, position);
      fs.closeSync(fd);
    }
    this.undo.push({ position, old, length });
    this.inner.write(buf, position);
  }

  async datasync(): Promise<void> {
    this.owner.alive();
    const covered = this.undo.length;
    if (this.owner.syncDelayMs > 0) await new Promise((r) => setTimeout(r, this.owner.syncDelayMs));
    await this.inner.datasync();
    this.owner.alive();
    this.undo.splice(0, covered);
    this.owner.syncs++;
  }

  async fill(from: number, to: number): Promise<void> {
    this.owner.alive();
    await this.inner.fill(from, to);
  }

  close(): void {
    this.inner.close();
  }

  /** Puts back what every unsynced write overwrote, newest first. */
  revert(): void {
    for (let i = this.undo.length - 1; i >= 0; i--) {
      const u = this.undo[i];
      const fd = fs.openSync(this.path, 'r+');
      fs.writeSync(fd, u.old, 0, u.old.length, u.position);
      fs.ftruncateSync(fd, Math.max(u.length, 0));
      // ftruncate to the old length drops an extension; a write inside the file keeps the length.
      fs.closeSync(fd);
    }
    this.undo = [];
  }
}

export class PowerLossFs implements WalFs {
  private readonly files: TrackedFile[] = [];
  private dead = false;
  syncDelayMs = 0;
  syncs = 0;

  alive(): void {
    if (this.dead) throw new Error('simulated power loss');
  }

  /** The machine loses power: unsynced bytes are gone, and every later call fails. */
  powerLoss(): void {
    this.dead = true;
    for (const f of this.files) f.revert();
  }

  list(dir: string): string[] {
    this.alive();
    return nodeWalFs.list(dir);
  }
  read(path: string): Buffer {
    this.alive();
    return nodeWalFs.read(path);
  }
  open(path: string): WalFile {
    this.alive();
    const f = new TrackedFile(this, path, nodeWalFs.open(path));
    this.files.push(f);
    return f;
  }
  async createSparse(path: string, size: number): Promise<void> {
    this.alive();
    await nodeWalFs.createSparse(path, size);
  }
  truncate(path: string, length: number, size: number): void {
    this.alive();
    nodeWalFs.truncate(path, length, size);
  }
  rename(from: string, to: string): void {
    this.alive();
    nodeWalFs.rename(from, to);
    for (const f of this.files) if (f.path === from) f.path = to;
  }
  unlink(path: string): void {
    this.alive();
    nodeWalFs.unlink(path);
  }
  syncDir(dir: string): void {
    this.alive();
    nodeWalFs.syncDir(dir);
  }
  mkdir(dir: string): void {
    this.alive();
    nodeWalFs.mkdir(dir);
  }
}
