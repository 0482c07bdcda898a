// The cases of ../watch.test.ts, on a 3-member kubit-store.
import { onKubitStore } from './use-kubit-store.js';

await onKubitStore('watch.test.ts', () => import('../watch.test.js'));
