// Authentication: client certificates (CN is the user, O the groups), bearer
// tokens from a Kubernetes token CSV, and ServiceAccount tokens (JWTs this
// apiserver signed, sa-tokens.ts). Anonymous requests are refused.
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { type BoundObjectLookup, ServiceAccountTokens, TokenVerificationError } from './sa-tokens.js';

export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  /** Extra attributes (a ServiceAccount token's pod and node), as Kubernetes' user.Info has. */
  extra?: Record<string, string[]>;
}

/** Splits one CSV line, honouring double quotes. */
function csvFields(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((s) => s.trim());
}

/** Reads a --token-auth-file: `token,user,uid,"group1,group2"` per line. */
export function loadTokenFile(path: string): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  const lines = readFileSync(path, 'utf8').split(/\r?\n/);
  lines.forEach((line, i) => {
    if (line.trim() === '' || line.trim().startsWith('#')) return;
    const f = csvFields(line);
    if (f.length < 3 || !f[0] || !f[1]) {
      throw new Error(`${path}:${i + 1}: expected token,user,uid[,"group1,group2"]`);
    }
    const groups = f[3]
      ? f[3]
          .split(',')
          .map((g) => g.trim())
          .filter((g) => g)
      : [];
    tokens.set(f[0], { name: f[1], uid: f[2], groups });
  });
  return tokens;
}

export class Authenticator {
  /**
   * The certificate user of each TLS connection: a connection's peer certificate
   * never changes, and decoding it on every request of a keep-alive connection
   * is measurable under load.
   */
  private readonly certUsers = new WeakMap<TLSSocket, UserInfo | null>();

  /** Each token's user with system:authenticated added, computed once per token. */
  private readonly tokenUsers = new Map<string, UserInfo>();

  constructor(
    tokens: Map<string, UserInfo>,
    private readonly serviceAccounts?: { tokens: ServiceAccountTokens; lookup: BoundObjectLookup },
    private readonly log?: { debug(o: object, msg: string): void },
  ) {
    for (const [token, u] of tokens) this.tokenUsers.set(token, withAuthenticated(u));
  }

  /**
   * The user a request comes from, or null when it proves no identity. Certificates and
   * static tokens answer at once; a ServiceAccount token is checked against the objects
   * it is bound to, so its answer is a promise.
   */
  authenticate(req: IncomingMessage): UserInfo | null | Promise<UserInfo | null> {
    const auth = req.headers.authorization;
    if (typeof auth === 'string' && /^bearer\s+/i.test(auth)) {
      const token = auth.replace(/^bearer\s+/i, '').trim();
      const user = this.tokenUsers.get(token);
      if (user) return user;
      return this.serviceAccountUser(token);
    }
    const sock = req.socket as TLSSocket;
    let user = this.certUsers.get(sock);
    if (user === undefined) {
      user = certificateUser(sock);
      this.certUsers.set(sock, user);
    }
    return user;
  }

  /** A ServiceAccount token's user, or null (why goes to the debug log: clients only learn "Unauthorized"). */
  private async serviceAccountUser(token: string): Promise<UserInfo | null> {
    const sa = this.serviceAccounts;
    if (!sa || !ServiceAccountTokens.looksLikeJwt(token)) return null;
    try {
      return (await sa.tokens.verify(token, sa.lookup)).user;
    } catch (err) {
      if (!(err instanceof TokenVerificationError)) throw err;
      this.log?.debug({ reason: err.message }, 'service account token refused');
      return null;
    }
  }
}

function certificateUser(sock: TLSSocket): UserInfo | null {
  if (!sock.authorized || typeof sock.getPeerCertificate !== 'function') return null;
  const cert = sock.getPeerCertificate();
  const cn = cert?.subject?.CN;
  if (typeof cn !== 'string' || !cn) return null;
  const o = cert.subject.O;
  const groups = Array.isArray(o) ? o : typeof o === 'string' ? [o] : [];
  return withAuthenticated({ name: cn, groups });
}

function withAuthenticated(u: UserInfo): UserInfo {
  return { ...u, groups: [...new Set([...u.groups, 'system:authenticated'])] };
}
