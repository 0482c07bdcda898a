// Kubernetes' CEL authorizer library: the `authorizer` variable of admission
// expressions asks the apiserver's own authorizer (Node, RBAC) whether the
// requesting user, or a service account, may do something:
//   authorizer.group('apps').resource('deployments').namespace('ns').check('delete').allowed()
//   authorizer.requestResource.check('escalate').allowed()
//   authorizer.path('/healthz').check('get').allowed()
//   authorizer.serviceAccount('ns', 'sa').group('')...
// The checks are synchronous: the authorizers read the watch caches.
import type { Environment } from '@marcbachmann/cel-js';
import type { UserInfo } from '../authn.js';
import type { Attributes, Authorizer } from '../authz.js';

/** The resource a check names; each builder step returns a new one. */
interface Target {
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export class CelAuthorizer {
  readonly #authz: Authorizer;
  readonly #user: UserInfo;
  /** The request's own resource, ready for `.check(verb)`. */
  readonly requestResource: ResourceCheck;
  constructor(authz: Authorizer, user: UserInfo, request: Target) {
    this.#authz = authz;
    this.#user = user;
    this.requestResource = new ResourceCheck(this, request);
  }
  decide(a: Omit<Attributes, 'user'>): AuthorizationDecision {
    const d = this.#authz.authorize({ ...a, user: this.#user });
    return new AuthorizationDecision(d.decision, d.reason);
  }
  /** The same checks as the service account `namespace/name`. */
  asServiceAccount(namespace: string, name: string): CelAuthorizer {
    const user: UserInfo = {
      name: `system:serviceaccount:${namespace}:${name}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
    };
    return new CelAuthorizer(this.#authz, user, this.requestResource.target);
  }
}

export class PathCheck {
  constructor(
    readonly az: CelAuthorizer,
    readonly path: string,
  ) {}
}

export class GroupCheck {
  constructor(
    readonly az: CelAuthorizer,
    readonly group: string,
  ) {}
}

export class ResourceCheck {
  constructor(
    readonly az: CelAuthorizer,
    readonly target: Target,
  ) {}
  with(change: Partial<Target>): ResourceCheck {
    return new ResourceCheck(this.az, { ...this.target, ...change });
  }
}

export class AuthorizationDecision {
  constructor(
    readonly decision: 'allow' | 'deny' | 'noopinion',
    readonly why: string,
  ) {}
}

const emptyTarget: Target = { group: '', resource: '', subresource: '', namespace: '', name: '' };

/** Registers the types and functions; expressions then declare `authorizer` as an Authorizer. */
export function registerAuthorizerLibrary(env: Environment): void {
  env
    .registerType('Authorizer', CelAuthorizer as never)
    .registerType('PathCheck', PathCheck as never)
    .registerType('GroupCheck', GroupCheck as never)
    .registerType('ResourceCheck', ResourceCheck as never)
    .registerType('Decision', AuthorizationDecision as never);
  env
    .registerFunction(
      'Authorizer.path(string): PathCheck',
      (az: CelAuthorizer, p: string) => new PathCheck(az, p),
    )
    .registerFunction(
      'Authorizer.group(string): GroupCheck',
      (az: CelAuthorizer, g: string) => new GroupCheck(az, g),
    )
    .registerFunction(
      'Authorizer.serviceAccount(string, string): Authorizer',
      (az: CelAuthorizer, ns: string, n: string) => az.asServiceAccount(ns, n),
    )
    .registerFunction(
      'GroupCheck.resource(string): ResourceCheck',
      (g: GroupCheck, r: string) => new ResourceCheck(g.az, { ...emptyTarget, group: g.group, resource: r }),
    )
    .registerFunction('ResourceCheck.subresource(string): ResourceCheck', (r: ResourceCheck, s: string) =>
      r.with({ subresource: s }),
    )
    .registerFunction('ResourceCheck.namespace(string): ResourceCheck', (r: ResourceCheck, s: string) =>
      r.with({ namespace: s }),
    )
    .registerFunction('ResourceCheck.name(string): ResourceCheck', (r: ResourceCheck, s: string) =>
      r.with({ name: s }),
    )
    .registerFunction('ResourceCheck.check(string): Decision', (r: ResourceCheck, verb: string) =>
      r.az.decide({ verb, resourceRequest: true, path: '', ...r.target }),
    )
    .registerFunction('PathCheck.check(string): Decision', (p: PathCheck, verb: string) =>
      p.az.decide({ verb, resourceRequest: false, path: p.path, ...emptyTarget }),
    )
    .registerFunction('Decision.allowed(): bool', (d: AuthorizationDecision) => d.decision === 'allow')
    .registerFunction('Decision.reason(): string', (d: AuthorizationDecision) => d.why)
    // The authorizers here decide from the caches and cannot fail part-way.
    .registerFunction('Decision.errored(): bool', () => false)
    .registerFunction('Decision.error(): string', () => '');
}
