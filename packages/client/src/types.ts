// The object shapes the client speaks in come from @kubit/api, the one family
// every package shares; they are structurally compatible with kubernetes-types
// (Pod, Node, ...), which callers may pass as type arguments.
import type { KubeObject } from '@kubit/api';

export type {
  KubeObject,
  ListMeta,
  ObjectList,
  ObjectMeta,
  Table,
  WatchEvent,
  WatchEventType,
} from '@kubit/api';

/** "namespace/name", or "name" for cluster-scoped objects (client-go's key). */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}
