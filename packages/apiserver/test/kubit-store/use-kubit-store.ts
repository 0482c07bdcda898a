// The files of this directory run the cases of the integration files one level
// up on a 3-member kubit-store instead of etcd, to prove that the apiserver
// works unchanged on both stores. KUBIT_TEST_BOTH_STORES=0 leaves them out (a
// quicker local run); ./scripts/test runs them.
import { test } from 'node:test';

export async function onKubitStore(file: string, load: () => Promise<unknown>): Promise<void> {
  if (process.env.KUBIT_TEST_BOTH_STORES === '0') {
    test(`${file} on a 3-member kubit-store`, { skip: 'KUBIT_TEST_BOTH_STORES=0' }, () => {});
    return;
  }
  // Read by testkit's startControlPlane when each file's before() hook runs.
  process.env.KUBIT_TEST_STORE = 'kubit-store';
  process.env.KUBIT_TEST_STORE_MEMBERS = '3';
  await load();
}
