/**
 * A minimal fake S3 endpoint that records every request's method, URL and headers and answers
 * just enough for the driver's write paths (PutObject, CopyObject, multipart upload, part copy),
 * or fails every request with a chosen status. For checking what the driver sends, and how it
 * behaves when the store keeps failing; real behaviour is tested against Ceph.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface FakeS3 {
  endpoint: string;
  requests: RecordedRequest[];
  /** answer every request with this status (and an S3 error body); undefined: behave */
  failWith: number | undefined;
  /** Content-Length answered to HEAD */
  headSize: number;
  close(): Promise<void>;
}

export async function startFakeS3(): Promise<FakeS3> {
  const state: Omit<FakeS3, 'endpoint' | 'close'> = { requests: [], failWith: undefined, headSize: 1 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.requests.push({ method: req.method!, url: req.url!, headers: req.headers });
      const url = new URL(req.url!, 'http://x');
      const xml = (body: string) => {
        res.writeHead(200, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body), etag: '"e"' });
        res.end(body);
      };
      if (state.failWith !== undefined) {
        const body = `<?xml version="1.0"?><Error><Code>${state.failWith === 503 ? 'SlowDown' : 'InternalError'}</Code><Message>fake failure</Message></Error>`;
        res.writeHead(state.failWith, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
        return res.end(body);
      }
      if (req.method === 'POST' && url.searchParams.has('uploads')) {
        return xml('<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>up1</UploadId></InitiateMultipartUploadResult>');
      }
      if (req.method === 'POST' && url.searchParams.has('uploadId')) {
        return xml('<CompleteMultipartUploadResult><ETag>"e"</ETag></CompleteMultipartUploadResult>');
      }
      if (req.method === 'PUT' && req.headers['x-amz-copy-source']) {
        return xml(url.searchParams.has('partNumber') ? '<CopyPartResult><ETag>"e"</ETag></CopyPartResult>' : '<CopyObjectResult><ETag>"e"</ETag></CopyObjectResult>');
      }
      if (req.method === 'GET' && url.searchParams.has('uploads')) return xml('<ListMultipartUploadsResult></ListMultipartUploadsResult>');
      if (req.method === 'HEAD') {
        res.writeHead(200, { 'content-length': state.headSize, 'last-modified': new Date().toUTCString(), etag: '"e"' });
        return res.end();
      }
      res.writeHead(req.method === 'DELETE' ? 204 : 200, { etag: '"e"', 'content-length': 0 });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake = state as FakeS3;
  fake.endpoint = `http://127.0.0.1:${port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
