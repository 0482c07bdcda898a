// ServiceAccount tokens, as Kubernetes' bound tokens are: JWTs signed RS256 with
// --service-account-signing-key-file, issued by the TokenRequest API
// (serviceaccounts/<name>/token) and verified on every request that carries one.
// A token names its ServiceAccount and, when bound, the Pod (or Secret) it was
// made for, with their uids: it stops working when that object is gone or has
// been replaced by one of the same name. JWT is three base64url parts joined by
// dots; node:crypto signs and verifies, which is all the format needs.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomUUID,
  sign,
  verify,
} from 'node:crypto';
import type { UserInfo } from './authn.js';

export const DEFAULT_ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** What a bound token is bound to (TokenRequest's spec.boundObjectRef). */
export interface BoundObject {
  kind: 'Pod' | 'Secret' | 'Node';
  name: string;
  uid: string;
}

export interface TokenSubject {
  namespace: string;
  serviceAccount: { name: string; uid: string };
  bound?: BoundObject;
  /** The node the bound pod runs on, for the token's claims and the user's extra. */
  node?: { name: string; uid: string };
}

/** The private "kubernetes.io" claim, as Kubernetes writes it. */
interface KubernetesClaim {
  namespace: string;
  serviceaccount: { name: string; uid: string };
  pod?: { name: string; uid: string };
  secret?: { name: string; uid: string };
  node?: { name: string; uid: string };
}

export interface TokenClaims {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  iat: number;
  nbf: number;
  jti: string;
  'kubernetes.io': KubernetesClaim;
}

/** Looks up the objects a token names, to check they still exist with the same uid. */
export interface BoundObjectLookup {
  uidOf(
    kind: 'ServiceAccount' | 'Pod' | 'Secret' | 'Node',
    namespace: string,
    name: string,
  ): Promise<string | undefined>;
}

export interface SaTokenOptions {
  /** PEM of the RSA private key tokens are signed with. */
  signingKey: Buffer;
  /** PEMs of public keys tokens may be verified with (the signing key's own is always one). */
  verificationKeys?: Buffer[];
  issuer?: string;
  /** Audiences the apiserver accepts; default: the issuer. */
  apiAudiences?: string[];
  /** The longest expiration a request may ask for, in seconds. */
  maxExpirationSeconds?: number;
}

const b64url = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

export class TokenVerificationError extends Error {}

export class ServiceAccountTokens {
  readonly issuer: string;
  readonly apiAudiences: string[];
  readonly maxExpirationSeconds: number;
  private readonly privateKey: KeyObject;
  private readonly publicKeys: KeyObject[];
  private readonly keyId: string;

  constructor(opts: SaTokenOptions) {
    this.privateKey = createPrivateKey(opts.signingKey);
    if (this.privateKey.asymmetricKeyType !== 'rsa') {
      throw new Error(`the signing key is ${this.privateKey.asymmetricKeyType}, not RSA (tokens are RS256)`);
    }
    this.publicKeys = [
      createPublicKey(this.privateKey),
      ...(opts.verificationKeys ?? []).map((k) => createPublicKey(k)),
    ];
    this.issuer = opts.issuer ?? DEFAULT_ISSUER;
    this.apiAudiences = opts.apiAudiences?.length ? opts.apiAudiences : [this.issuer];
    this.maxExpirationSeconds = opts.maxExpirationSeconds ?? 2 ** 32;
    // Kubernetes names its key by a sha256 of the public key (the JWT "kid").
    const der = createPublicKey(this.privateKey).export({ type: 'spki', format: 'der' });
    this.keyId = b64url(createHash('sha256').update(der).digest());
  }

  /** A signed token for the subject, valid from now for `expirationSeconds`. */
  issue(
    subject: TokenSubject,
    audiences: string[],
    expirationSeconds: number,
    now = Date.now(),
  ): {
    token: string;
    expiresAt: Date;
  } {
    const iat = Math.floor(now / 1000);
    const claim: KubernetesClaim = {
      namespace: subject.namespace,
      serviceaccount: subject.serviceAccount,
    };
    if (subject.bound?.kind === 'Pod') claim.pod = { name: subject.bound.name, uid: subject.bound.uid };
    if (subject.bound?.kind === 'Secret') claim.secret = { name: subject.bound.name, uid: subject.bound.uid };
    if (subject.node) claim.node = subject.node;
    const claims: TokenClaims = {
      iss: this.issuer,
      sub: `system:serviceaccount:${subject.namespace}:${subject.serviceAccount.name}`,
      aud: audiences.length ? audiences : this.apiAudiences,
      exp: iat + expirationSeconds,
      iat,
      nbf: iat,
      jti: randomUUID(),
      'kubernetes.io': claim,
    };
    const head = b64url(JSON.stringify({ alg: 'RS256', kid: this.keyId }));
    const body = b64url(JSON.stringify(claims));
    const sig = sign('RSA-SHA256', Buffer.from(`${head}.${body}`), this.privateKey);
    return { token: `${head}.${body}.${b64url(sig)}`, expiresAt: new Date(claims.exp * 1000) };
  }

  /** Whether a bearer token is shaped as a JWT this apiserver would have issued (three parts). */
  static looksLikeJwt(token: string): boolean {
    return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
  }

  /**
   * The user a token stands for, once its signature, issuer, audience, times and
   * bound objects check out; throws TokenVerificationError saying which did not.
   * `audiences` are the ones the caller accepts (the API's, or a TokenReview's).
   */
  async verify(
    token: string,
    lookup: BoundObjectLookup,
    audiences: string[] = this.apiAudiences,
    now = Date.now(),
  ): Promise<{ user: UserInfo; audiences: string[] }> {
    const parts = token.split('.');
    if (parts.length !== 3) throw new TokenVerificationError('not a JWT');
    const [head, body, sig] = parts;
    let header: { alg?: string };
    let claims: TokenClaims;
    try {
      header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8'));
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw new TokenVerificationError('malformed token');
    }
    if (header.alg !== 'RS256')
      throw new TokenVerificationError(`unsupported signing algorithm ${header.alg}`);
    const signed = Buffer.from(`${head}.${body}`);
    const signature = Buffer.from(sig, 'base64url');
    if (!this.publicKeys.some((k) => verify('RSA-SHA256', signed, k, signature))) {
      throw new TokenVerificationError('invalid signature');
    }
    if (claims.iss !== this.issuer) throw new TokenVerificationError('token issuer is not this apiserver');
    const tokenAudiences = Array.isArray(claims.aud) ? claims.aud : [String(claims.aud)];
    const accepted = tokenAudiences.filter((a) => audiences.includes(a));
    if (accepted.length === 0) throw new TokenVerificationError('token audiences are invalid');
    const secs = now / 1000;
    if (typeof claims.exp !== 'number' || secs >= claims.exp)
      throw new TokenVerificationError('token has expired');
    if (typeof claims.nbf === 'number' && secs < claims.nbf - 60)
      throw new TokenVerificationError('token is not valid yet');
    const k = claims['kubernetes.io'];
    if (!k?.namespace || !k.serviceaccount?.name)
      throw new TokenVerificationError('not a service account token');
    const saUid = await lookup.uidOf('ServiceAccount', k.namespace, k.serviceaccount.name);
    if (saUid === undefined)
      throw new TokenVerificationError(
        `service account ${k.namespace}/${k.serviceaccount.name} does not exist`,
      );
    if (saUid !== k.serviceaccount.uid)
      throw new TokenVerificationError('service account UID does not match the token');
    for (const [kind, ref] of [
      ['Pod', k.pod],
      ['Secret', k.secret],
    ] as const) {
      if (!ref) continue;
      const uid = await lookup.uidOf(kind, k.namespace, ref.name);
      if (uid === undefined)
        throw new TokenVerificationError(`${kind.toLowerCase()} ${k.namespace}/${ref.name} does not exist`);
      if (uid !== ref.uid)
        throw new TokenVerificationError(`${kind.toLowerCase()} UID does not match the token`);
    }
    const extra: Record<string, string[]> = {
      'authentication.kubernetes.io/credential-id': [`JTI=${claims.jti}`],
    };
    if (k.pod) {
      extra['authentication.kubernetes.io/pod-name'] = [k.pod.name];
      extra['authentication.kubernetes.io/pod-uid'] = [k.pod.uid];
    }
    if (k.node) {
      extra['authentication.kubernetes.io/node-name'] = [k.node.name];
      extra['authentication.kubernetes.io/node-uid'] = [k.node.uid];
    }
    return {
      user: {
        name: claims.sub,
        uid: k.serviceaccount.uid,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${k.namespace}`, 'system:authenticated'],
        extra,
      },
      audiences: accepted,
    };
  }
}
