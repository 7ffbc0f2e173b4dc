#!/usr/bin/env node
// An openhuman-host provider written in Node.js, without the Go SDK.
//
// The host starts this file as a go-plugin subprocess. It speaks the
// go-plugin handshake (magic cookie, protocol version, one line on stdout),
// serves gRPC over a unix socket with mutual TLS (AutoMTLS), and implements
// the openhuman.provider.v1.Provider service from
// sdk/proto/openhuman/provider/v1/provider.proto plus the small services
// go-plugin clients call: grpc.health.v1.Health, plugin.GRPCController and
// plugin.GRPCBroker. docs/provider-protocol.md describes the contract.
//
// Tools: node_echo and node_add. Resource: node://about.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const util = require('node:util');

const MAGIC_COOKIE_KEY = 'OPENHUMAN_PROVIDER';
const MAGIC_COOKIE_VALUE = '8d1f3c0e6b2a4f59a7c4e2d18b3f6a90';
// go-plugin's own wire protocol version: the first field of the handshake.
const CORE_PROTOCOL_VERSION = 1;
// The openhuman provider protocol version this file implements.
const PROVIDER_PROTOCOL_VERSION = 1;
// The same bound the Go SDK sets on every message in either direction.
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const PARENT_POLL_MS = 500;
// Name of the service go-plugin's health check asks about.
const HEALTH_SERVICE = 'plugin';

// ---- logging: JSON lines on stderr, in the shape go-plugin parses -------

const LEVELS = { trace: 0, debug: 1, info: 2, warn: 3, error: 4, off: 5 };
let minLevel = LEVELS.debug;

// go-plugin parses @timestamp with microsecond precision
// (2006-01-02T15:04:05.000000Z07:00); a line whose timestamp does not
// parse is not treated as JSON at all.
function timestamp() {
  return new Date().toISOString().replace(/Z$/, '000Z');
}

// The @ keys must be strings: go-plugin v1.8 asserts their type, and a
// line with a non-string @level, @message or @timestamp panics the host.
// They go last so no field can replace them.
function log(level, message, fields) {
  if (LEVELS[level] < minLevel) return;
  const entry = { ...fields, '@level': level, '@message': String(message), '@timestamp': timestamp() };
  process.stderr.write(JSON.stringify(entry) + '\n');
}

// ---- handshake preconditions ----------------------------------------------

function fail(message) {
  process.stderr.write(`provider.js: ${message}\n`);
  process.exit(1);
}

if (process.env[MAGIC_COOKIE_KEY] !== MAGIC_COOKIE_VALUE) {
  fail(
    'this is an openhuman-host provider; the host starts it and talks to it over gRPC.\n' +
      'Name this file as the command of a [providers.<name>] table in the host config\n' +
      'instead of running it by hand.',
  );
}

const offered = (process.env.PLUGIN_PROTOCOL_VERSIONS || '')
  .split(',')
  .map((v) => v.trim())
  .filter((v) => v !== '');
if (offered.length === 0) {
  fail(`PLUGIN_PROTOCOL_VERSIONS is not set; the host lists the provider protocol versions it speaks there`);
}
if (!offered.includes(String(PROVIDER_PROTOCOL_VERSION))) {
  fail(
    `the host offers provider protocol versions [${offered.join(', ')}] (PLUGIN_PROTOCOL_VERSIONS); ` +
      `this provider speaks version ${PROVIDER_PROTOCOL_VERSION} only`,
  );
}

const clientCertPEM = process.env.PLUGIN_CLIENT_CERT || '';
if (!clientCertPEM.includes('-----BEGIN CERTIFICATE-----')) {
  fail('PLUGIN_CLIENT_CERT holds no PEM certificate; the host must enable AutoMTLS');
}

let grpc, protoLoader, forge;
try {
  grpc = require('@grpc/grpc-js');
  protoLoader = require('@grpc/proto-loader');
  forge = require('node-forge');
} catch (err) {
  fail(`${err.message}\nrun \`npm ci\` in ${__dirname} (or \`make interop-deps\` in the repository)`);
}

const pkg = require('./package.json');

// ---- the catalog ----------------------------------------------------------

const ABOUT_URI = 'node://about';
const ABOUT_TEXT = [
  '# node provider',
  '',
  'An openhuman-host provider written in Node.js. It speaks the go-plugin',
  'handshake and the openhuman.provider.v1 gRPC protocol directly, without',
  'the Go SDK, and serves two tools: `node_echo` and `node_add`.',
  '',
].join('\n');

const json = (v) => Buffer.from(JSON.stringify(v));

const TOOLS = {
  'node_echo': {
    spec: {
      title: 'Echo',
      description: 'Returns the text it is given, unchanged.',
      input: {
        type: 'object',
        properties: {
          text: { type: 'string', minLength: 1, maxLength: 10000, description: 'The text to return.' },
        },
        required: ['text'],
        additionalProperties: false,
      },
      output: {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
        additionalProperties: false,
      },
      annotations: { read_only_hint: true, idempotent_hint: true, open_world_hint: false },
    },
    async run(args) {
      if (typeof args.text !== 'string' || args.text.length === 0) {
        return errorResult('text must be a non-empty string');
      }
      return { content: [{ type: 'text', text: args.text }], structured: { text: args.text } };
    },
  },
  'node_add': {
    spec: {
      title: 'Add',
      description: 'Adds two numbers and returns their sum.',
      input: {
        type: 'object',
        properties: {
          a: { type: 'number', description: 'The first addend.' },
          b: { type: 'number', description: 'The second addend.' },
        },
        required: ['a', 'b'],
        additionalProperties: false,
      },
      output: {
        type: 'object',
        properties: { sum: { type: 'number' } },
        required: ['sum'],
        additionalProperties: false,
      },
      annotations: { read_only_hint: true, idempotent_hint: true, open_world_hint: false },
    },
    async run(args, ctx) {
      if (typeof args.a !== 'number' || typeof args.b !== 'number') {
        return errorResult('a and b must both be numbers');
      }
      // Sent only when the client asked for progress.
      await ctx.progress({ progress: 1, total: 1, message: `adding ${args.a} and ${args.b}` });
      const sum = args.a + args.b;
      return { content: [{ type: 'text', text: `${args.a} + ${args.b} = ${sum}` }], structured: { sum } };
    },
  },
};

function errorResult(text) {
  return { content: [{ type: 'text', text }], isError: true };
}

function describe() {
  return {
    name: 'node',
    version: pkg.version,
    tools: Object.entries(TOOLS).map(([name, { spec }]) => ({
      name,
      title: spec.title,
      description: spec.description,
      input_schema_json: json(spec.input),
      output_schema_json: json(spec.output),
      annotations: { title: spec.title, ...spec.annotations },
      policy_class: 'POLICY_CLASS_READ',
      timeout_ms: 0,
    })),
    resources: [
      {
        uri: ABOUT_URI,
        name: 'about',
        title: 'About the node provider',
        description: 'What this provider is and what it serves.',
        mime_type: 'text/markdown',
        size: Buffer.byteLength(ABOUT_TEXT),
      },
    ],
    resource_templates: [],
    prompts: [],
    instructions: '',
  };
}

// ---- gRPC services ----------------------------------------------------------

const LOADER_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

function loadProto(file) {
  return grpc.loadPackageDefinition(protoLoader.loadSync(file, LOADER_OPTIONS));
}

function statusError(code, details) {
  const err = new Error(details);
  err.code = code;
  err.details = details;
  return err;
}

function parseObject(buf, what) {
  const text = buf && buf.length > 0 ? buf.toString('utf8') : '{}';
  let v;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw statusError(grpc.status.INVALID_ARGUMENT, `${what} is not valid JSON: ${err.message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw statusError(grpc.status.INVALID_ARGUMENT, `${what} must be a JSON object`);
  }
  return v;
}

// unary wraps an async handler for a unary call: a thrown error with a gRPC
// code is sent as that status, anything else as UNKNOWN with its message.
function unary(name, fn) {
  return (call, callback) => {
    Promise.resolve()
      .then(() => fn(call.request, call))
      .then(
        (res) => callback(null, res),
        (err) => {
          if (typeof err.code !== 'number') log('error', `${name} failed`, { error: String(err && err.stack) });
          callback(typeof err.code === 'number' ? err : statusError(grpc.status.UNKNOWN, String(err.message || err)));
        },
      );
  };
}

const providerService = {
  Configure: unary('Configure', (req) => {
    const config = parseObject(req.config_json, 'config_json');
    if (Object.prototype.hasOwnProperty.call(LEVELS, req.log_level)) minLevel = LEVELS[req.log_level];
    log('debug', 'configured', {
      host_version: req.host_version,
      data_dir: req.data_dir,
      settings: Object.keys(config),
      secrets: Object.keys(req.secrets || {}),
    });
    return {};
  }),

  Describe: unary('Describe', () => describe()),

  // CallTool streams zero or more events, then exactly one result. The host
  // cancels the call (a gRPC cancellation) when the client cancels, goes
  // away, or the tool's deadline passes.
  CallTool(call) {
    const req = call.request;
    const tool = TOOLS[req.name];
    const abort = new AbortController();
    call.on('cancelled', () => abort.abort());
    const send = (event) => {
      if (abort.signal.aborted) throw statusError(grpc.status.CANCELLED, 'call cancelled');
      call.write(event);
    };
    const hasProgressToken = req.caller && req.caller.progress_token_json && req.caller.progress_token_json.length > 0;
    const ctx = {
      signal: abort.signal,
      async progress(p) {
        if (hasProgressToken) send({ progress: { progress: p.progress, total: p.total || 0, message: p.message || '' } });
      },
    };
    Promise.resolve()
      .then(() => {
        if (!tool) throw statusError(grpc.status.INVALID_ARGUMENT, `node provider has no tool ${JSON.stringify(req.name)}`);
        return tool.run(parseObject(req.arguments_json, 'arguments_json'), ctx);
      })
      .then((res) => {
        send({
          result: {
            content: res.content,
            structured_content_json: res.structured ? json(res.structured) : Buffer.alloc(0),
            is_error: Boolean(res.isError),
          },
        });
        call.end();
      })
      .catch((err) => {
        if (abort.signal.aborted) return;
        if (typeof err.code !== 'number') log('error', `tool ${req.name} failed`, { error: String(err && err.stack) });
        call.emit('error', typeof err.code === 'number' ? err : statusError(grpc.status.UNKNOWN, String(err.message || err)));
      });
  },

  // An unknown URI is NOT_FOUND, which the host reports to the client as
  // MCP's resource-not-found error.
  ReadResource: unary('ReadResource', (req) => {
    if (req.uri !== ABOUT_URI) {
      throw statusError(grpc.status.NOT_FOUND, `node provider: resource not found: ${req.uri}`);
    }
    return { contents: [{ uri: ABOUT_URI, mime_type: 'text/markdown', text: ABOUT_TEXT, blob: Buffer.alloc(0) }] };
  }),
};

const healthService = {
  Check: unary('Health.Check', (req) => {
    if (req.service !== '' && req.service !== HEALTH_SERVICE) {
      throw statusError(grpc.status.NOT_FOUND, `unknown service ${JSON.stringify(req.service)}`);
    }
    return { status: 'SERVING' };
  }),
};

// go-plugin's host side opens this stream right after connecting and sends
// the address of every service it offers through the broker (the Host
// service among them). This provider dials none of them; it reads and drops
// the offers and keeps the stream open until the host closes it.
const brokerService = {
  StartStream(call) {
    call.on('data', (info) => log('debug', 'broker offer not used', { service_id: info.service_id }));
    call.on('end', () => call.end());
    call.on('error', () => {});
  },
};

let server = null;
let stopping = false;

// stop ends the process once: the gRPC server first, then the exit handler
// removes the socket directory.
function stop(code, why) {
  if (stopping) return;
  stopping = true;
  log(code === 0 ? 'debug' : 'warn', why);
  if (server) server.forceShutdown();
  process.exit(code);
}

const controllerService = {
  // The host calls Shutdown when it stops the provider; the reply goes out
  // before the process exits.
  Shutdown(call, callback) {
    callback(null, {});
    setTimeout(() => stop(0, 'host asked for shutdown; exiting'), 50);
  },
};

// ---- AutoMTLS ---------------------------------------------------------------

// selfSignedCert returns a fresh key and a self-signed certificate for
// "localhost" that serves both as the server's certificate and as the CA
// the host verifies it against. The key is made and the certificate signed
// by Node's own crypto; node-forge only lays out the X.509 structure.
function selfSignedCert() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }));
  // A leading 01 keeps the serial positive, as X.509 requires.
  cert.serialNumber = '01' + crypto.randomBytes(15).toString('hex');
  cert.validity.notBefore = new Date(Date.now() - 30 * 1000);
  cert.validity.notAfter = new Date(Date.now() + 30 * 365 * 24 * 3600 * 1000);
  const name = [{ name: 'commonName', value: 'localhost' }];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] },
  ]);
  cert.signatureOid = cert.siginfo.algorithmOid = forge.pki.oids.sha256WithRSAEncryption;
  cert.tbsCertificate = forge.pki.getTBSCertificate(cert);
  const tbs = Buffer.from(forge.asn1.toDer(cert.tbsCertificate).getBytes(), 'binary');
  cert.signature = crypto.sign('sha256', tbs, privateKey).toString('binary');
  const der = Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary');
  return {
    der,
    certPEM: new crypto.X509Certificate(der).toString(),
    keyPEM: privateKey.export({ type: 'pkcs8', format: 'pem' }),
  };
}

// ---- start --------------------------------------------------------------

function main() {
  // The socket lives in a fresh directory only this user can enter; the exit
  // handler removes it.
  const base = process.env.PLUGIN_UNIX_SOCKET_DIR || os.tmpdir();
  const dir = fs.mkdtempSync(path.join(base, 'openhuman-node-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const socketPath = path.join(dir, 'plugin.sock');

  process.on('SIGTERM', () => stop(0, 'SIGTERM; exiting'));
  process.on('SIGHUP', () => stop(0, 'SIGHUP; exiting'));
  // Like go-plugin's own servers: an interrupt meant for the host (Ctrl-C in
  // its terminal) does not stop the provider; the host does.
  process.on('SIGINT', () => log('trace', 'interrupt ignored'));
  process.on('uncaughtException', (err) => {
    log('error', 'uncaught exception', { error: String(err && err.stack) });
    stop(1, 'exiting after an uncaught exception');
  });

  // The parent pid changes when the host dies and the process is
  // re-parented; stdin is /dev/null, so its end says nothing.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop(1, 'host process is gone; exiting');
  }, PARENT_POLL_MS).unref();

  const { der, certPEM, keyPEM } = selfSignedCert();
  const credentials = grpc.ServerCredentials.createSsl(
    Buffer.from(clientCertPEM),
    [{ private_key: Buffer.from(keyPEM), cert_chain: Buffer.from(certPEM) }],
    true, // require and verify the host's client certificate
  );

  const protoDir = path.join(__dirname, 'proto');
  const providerProto = loadProto(path.join(__dirname, '../../sdk/proto/openhuman/provider/v1/provider.proto'));
  const healthProto = loadProto(path.join(protoDir, 'health.proto'));
  const brokerProto = loadProto(path.join(protoDir, 'grpc_broker.proto'));
  const controllerProto = loadProto(path.join(protoDir, 'grpc_controller.proto'));

  server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(providerProto.openhuman.provider.v1.Provider.service, providerService);
  server.addService(healthProto.grpc.health.v1.Health.service, healthService);
  server.addService(brokerProto.plugin.GRPCBroker.service, brokerService);
  server.addService(controllerProto.plugin.GRPCController.service, controllerService);
  // plugin.GRPCStdio is not served: this process's stdout and stderr are
  // not forwarded over gRPC, and go-plugin falls back to reading stderr.

  server.bindAsync(`unix:${socketPath}`, credentials, (err) => {
    if (err) {
      log('error', 'listen failed', { socket: socketPath, error: err.message });
      stop(1, 'exiting: cannot listen');
      return;
    }
    // CORE-PROTOCOL|APP-PROTOCOL|NETWORK|ADDRESS|PROTOCOL|SERVER-CERT, the
    // certificate as base64 of its DER without padding. A host that asks
    // for gRPC broker multiplexing gets a seventh field: not supported.
    const fields = [
      CORE_PROTOCOL_VERSION,
      PROVIDER_PROTOCOL_VERSION,
      'unix',
      socketPath,
      'grpc',
      der.toString('base64').replace(/=+$/, ''),
    ];
    if (process.env.PLUGIN_MULTIPLEX_GRPC) fields.push('false');
    fs.writeSync(1, fields.join('|') + '\n');
    // From here on stdout is the host's handshake channel and must stay
    // silent: anything printed through console goes to the log instead.
    for (const [method, level] of [
      ['log', 'info'],
      ['info', 'info'],
      ['debug', 'debug'],
      ['warn', 'warn'],
    ]) {
      console[method] = (...args) => log(level, util.format(...args));
    }
    log('debug', 'serving', { socket: socketPath, version: pkg.version, pid: process.pid });
  });
}

main();
