// The cases of ../kubectl.test.ts, on a 3-member kubit-store.
import { onKubitStore } from './use-kubit-store.js';

await onKubitStore('kubectl.test.ts', () => import('../kubectl.test.js'));
