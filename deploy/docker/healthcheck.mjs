// Docker health check for Kubit's daemons: GET the URL (http or https; the
// health ports use self-signed certificates, so the certificate is not
// checked) and exit 0 on a 200, 1 otherwise. The images have no curl.
//   node healthcheck.mjs URL [CLIENT_CERT CLIENT_KEY]   (the kubelet asks for a client certificate)
import { readFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';

const url = process.argv[2];
if (!url) {
  console.error('usage: healthcheck.mjs URL [CLIENT_CERT CLIENT_KEY]');
  process.exit(2);
}
const get = url.startsWith('https:') ? httpsGet : httpGet;
const [certFile, keyFile] = process.argv.slice(3);
const clientTls = certFile && keyFile ? { cert: readFileSync(certFile), key: readFileSync(keyFile) } : {};
const req = get(url, { rejectUnauthorized: false, timeout: 4000, ...clientTls }, (res) => {
  res.resume();
  process.exit(res.statusCode === 200 ? 0 : 1);
});
req.on('timeout', () => req.destroy(new Error('timeout')));
req.on('error', (err) => {
  console.error(`${url}: ${err.message}`);
  process.exit(1);
});
