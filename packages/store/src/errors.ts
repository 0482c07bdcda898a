// etcd's v3 API errors: the same gRPC status code and message as etcd sends,
// so clients that match on them (etcdctl, client libraries) behave the same.
import { status } from '@grpc/grpc-js';

export class EtcdError extends Error {
  override name = 'EtcdError';
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
  }
}

const e = (code: status, message: string) => () => new EtcdError(code, message);

export const Errors = {
  emptyKey: e(status.INVALID_ARGUMENT, 'etcdserver: key is not provided'),
  keyNotFound: e(status.INVALID_ARGUMENT, 'etcdserver: key not found'),
  valueProvided: e(status.INVALID_ARGUMENT, 'etcdserver: value is provided'),
  leaseProvided: e(status.INVALID_ARGUMENT, 'etcdserver: lease is provided'),
  tooManyOps: e(status.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request'),
  duplicateKey: e(status.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'),
  compacted: e(status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'),
  futureRev: e(status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
  leaseNotFound: e(status.NOT_FOUND, 'etcdserver: requested lease not found'),
  leaseExist: e(status.FAILED_PRECONDITION, 'etcdserver: lease already exists'),
  leaseTTLTooLarge: e(status.OUT_OF_RANGE, 'etcdserver: too large lease TTL'),
  memberExist: e(status.FAILED_PRECONDITION, 'etcdserver: member ID already exist'),
  peerURLExist: e(status.FAILED_PRECONDITION, 'etcdserver: Peer URLs already exists'),
  memberNotEnoughStarted: e(
    status.FAILED_PRECONDITION,
    'etcdserver: re-configuration failed due to not enough started members',
  ),
  memberBadURLs: e(status.INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid'),
  memberNotFound: e(status.NOT_FOUND, 'etcdserver: member not found'),
  memberNotLearner: e(status.FAILED_PRECONDITION, 'etcdserver: can only promote a learner member'),
  learnerNotReady: e(
    status.FAILED_PRECONDITION,
    'etcdserver: can only promote a learner member which is in sync with leader',
  ),
  requestTooLarge: e(status.INVALID_ARGUMENT, 'etcdserver: request is too large'),
  noLeader: e(status.UNAVAILABLE, 'etcdserver: no leader'),
  notLeader: e(status.FAILED_PRECONDITION, 'etcdserver: not leader'),
  leaderChanged: e(status.UNAVAILABLE, 'etcdserver: leader changed'),
  stopped: e(status.UNAVAILABLE, 'etcdserver: server stopped'),
  timeout: e(status.UNAVAILABLE, 'etcdserver: request timed out'),
  /** A request whose client stopped waiting (its grpc-timeout passed) before it was proposed. */
  deadlineExceeded: e(status.DEADLINE_EXCEEDED, 'context deadline exceeded'),
  notSupportedForLearner: e(status.UNAVAILABLE, 'etcdserver: rpc not supported for learner'),
  badLeaderTransferee: e(status.FAILED_PRECONDITION, 'etcdserver: bad leader transferee'),
};
