// The few file operations the WAL makes, behind an interface so a test can
// stand between the WAL and the disk (drop unsynced bytes at a simulated
// power loss, slow an fdatasync down) while the files stay real.
import * as fs from 'node:fs';

export interface WalFile {
  /** Writes all of `buf` at `position` (into the page cache: not durable yet). */
  write(buf: Buffer, position: number): void;
  /** Makes every byte written so far durable; the event loop stays free meanwhile. */
  datasync(): Promise<void>;
  close(): void;
}

export interface WalFs {
  list(dir: string): string[];
  read(path: string): Buffer;
  open(path: string): WalFile;
  /** Creates `path` holding `size` zero bytes, durable (a segment preallocated ahead of need). */
  preallocate(path: string, size: number): Promise<void>;
  /** Cuts `path` to `length` bytes, then zero-fills it back to `size` (a torn tail repaired). */
  truncate(path: string, length: number, size: number): void;
  rename(from: string, to: string): void;
  unlink(path: string): void;
  /** Makes the directory's entries (creates, renames, unlinks) durable. */
  syncDir(dir: string): void;
  mkdir(dir: string): void;
}

const ZERO_CHUNK = Buffer.alloc(1024 * 1024);

class NodeWalFile implements WalFile {
  constructor(private readonly fd: number) {}

  write(buf: Buffer, position: number): void {
    let done = 0;
    while (done < buf.length) done += fs.writeSync(this.fd, buf, done, buf.length - done, position + done);
  }

  datasync(): Promise<void> {
    return new Promise((resolve, reject) => {
      fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve()));
    });
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

export const nodeWalFs: WalFs = {
  list: (dir) => fs.readdirSync(dir),
  read: (path) => fs.readFileSync(path),
  open: (path) => new NodeWalFile(fs.openSync(path, 'r+')),
  async preallocate(path, size) {
    // Zero-filled, not sparse: a write into a hole makes fdatasync commit the
    // block allocation too, and the WAL's point is one cheap sync per batch.
    const fh = await fs.promises.open(path, 'w');
    try {
      for (let at = 0; at < size; at += ZERO_CHUNK.length) {
        await fh.write(ZERO_CHUNK, 0, Math.min(ZERO_CHUNK.length, size - at), at);
      }
      await fh.datasync();
    } finally {
      await fh.close();
    }
  },
  truncate(path, length, size) {
    const fd = fs.openSync(path, 'r+');
    try {
      fs.ftruncateSync(fd, length);
      for (let at = length; at < size; at += ZERO_CHUNK.length) {
        fs.writeSync(fd, ZERO_CHUNK, 0, Math.min(ZERO_CHUNK.length, size - at), at);
      }
      fs.fdatasyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  },
  rename: (from, to) => fs.renameSync(from, to),
  unlink: (path) => fs.unlinkSync(path),
  syncDir(dir) {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  },
  mkdir: (dir) => fs.mkdirSync(dir, { recursive: true }),
};
