// The cases of ../apps.test.ts, on a 3-member kubit-store.
import { onKubitStore } from './use-kubit-store.js';

await onKubitStore('apps.test.ts', () => import('../apps.test.js'));
