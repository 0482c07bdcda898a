// The cases of ../writes.test.ts, on a 3-member kubit-store.
import { onKubitStore } from './use-kubit-store.js';

await onKubitStore('writes.test.ts', () => import('../writes.test.js'));
