// The kubelet's ServiceAccount tokens for projected serviceAccountToken volume
// sources (the kube-api-access volume every pod gets): asked of the TokenRequest
// API bound to the pod, kept per pod and audience, and asked again once 80% of
// their life has passed (or 24 hours), as Kubernetes' token manager does. A pod's
// volumes are set up on each of its syncs, so a refreshed token reaches its file
// within a resync.
import type { Pod } from 'kubernetes-types/core/v1.js';

export interface TokenRequestSpec {
  namespace: string;
  serviceAccount: string;
  audiences: string[];
  expirationSeconds: number;
  pod: { name: string; uid: string };
}

export interface IssuedToken {
  token: string;
  /** When the apiserver says it expires (ms since the epoch). */
  expiresAt: number;
}

/** Where tokens come from (the daemon: POST serviceaccounts/<name>/token). */
export interface TokenIssuer {
  requestToken(spec: TokenRequestSpec): Promise<IssuedToken>;
}

const MAX_TOKEN_AGE_MS = 24 * 3600 * 1000;

interface Cached extends IssuedToken {
  issuedAt: number;
}

export class TokenManager {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly issuer: TokenIssuer,
    private readonly now: () => number = Date.now,
  ) {}

  private static key(s: TokenRequestSpec): string {
    return JSON.stringify([s.namespace, s.serviceAccount, s.pod.uid, s.audiences, s.expirationSeconds]);
  }

  /** Whether a token should be asked for again: 80% of its life gone, or a day old. */
  private stale(t: Cached): boolean {
    const now = this.now();
    const life = t.expiresAt - t.issuedAt;
    return now >= t.issuedAt + life * 0.8 || now - t.issuedAt > MAX_TOKEN_AGE_MS;
  }

  async token(spec: TokenRequestSpec): Promise<string> {
    const key = TokenManager.key(spec);
    const cached = this.cache.get(key);
    if (cached && !this.stale(cached)) return cached.token;
    const issued = await this.issuer.requestToken(spec);
    this.cache.set(key, { ...issued, issuedAt: this.now() });
    return issued.token;
  }

  /** Forgets a pod's tokens once it is gone. */
  forgetPod(uid: string): void {
    for (const key of [...this.cache.keys()]) if (JSON.parse(key)[2] === uid) this.cache.delete(key);
  }
}

/** The TokenRequest for a projected source of `pod`. */
export function tokenRequestFor(
  pod: Pod,
  src: { audience?: string; expirationSeconds?: number },
): TokenRequestSpec {
  return {
    namespace: pod.metadata?.namespace ?? 'default',
    serviceAccount: pod.spec?.serviceAccountName || 'default',
    audiences: src.audience ? [src.audience] : [],
    expirationSeconds: src.expirationSeconds ?? 3600,
    pod: { name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
  };
}
