#!/usr/bin/env node
// The Node HTTP service of bench/peers/PROTOCOL.md: Node's http module and node-postgres' pg.Pool,
// serving the two rows of the key-value API that bench/compare's load uses, with the statements that
// `respool serve` runs on PostgreSQL (tools/respool/pg_store.cpp).
//
//   node kvservice.js --listen 127.0.0.1:PORT --pool N   (the server from the PG* variables)
//
// Prints "listening on http://127.0.0.1:PORT" (the bound port, so PORT 0 works) once listening;
// SIGTERM or SIGINT closes the server and the pool and exits 0.
//
//   GET  /kv/{key}       200 with the stored bytes, 404 when absent
//   POST /kv/{key}/incr  200 with the new value in decimal; 409 when the stored value is not an
//                        integer within signed 64 bits, or the increment would overflow
//   a key is 1-200 characters of [A-Za-z0-9._-], not percent-decoded: anything else 400; an unknown
//   path 404; a known path with another method 405; a database error 503 (Retry-After: 1) when no
//   connection could be had, 500 otherwise.
'use strict';

const http = require('node:http');
const { Pool } = require('pg');

const PROG = 'kvservice.js';

function die(message) {
  process.stderr.write(`${PROG}: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  let listen = null;
  let pool = null;
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if ((a === '--listen' || a === '--pool') && i + 1 < argv.length) {
      if (a === '--listen') listen = argv[++i];
      else pool = argv[++i];
    } else if (a.startsWith('--listen=')) {
      listen = a.slice('--listen='.length);
    } else if (a.startsWith('--pool=')) {
      pool = a.slice('--pool='.length);
    } else {
      die(`unknown argument "${a}" (usage: node ${PROG} --listen HOST:PORT --pool N)`);
    }
  }
  if (listen === null || pool === null) die(`usage: node ${PROG} --listen HOST:PORT --pool N`);
  const colon = listen.lastIndexOf(':');
  if (colon <= 0) die(`--listen takes HOST:PORT, not "${listen}"`);
  let host = listen.slice(0, colon);
  const portText = listen.slice(colon + 1);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (!/^[0-9]+$/.test(portText) || Number(portText) > 65535) die(`bad port in --listen "${listen}"`);
  if (!/^[0-9]+$/.test(pool) || Number(pool) < 1) die(`--pool takes a positive integer, not "${pool}"`);
  return { host, port: Number(portText), max: Number(pool) };
}

// ---- routing (as tools/respool/handlers.cpp: the path without its query, keys not decoded) ----

const KEY = /^[A-Za-z0-9._-]{1,200}$/;

function match(url) {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (!path.startsWith('/kv/')) return null;
  const rest = path.slice('/kv/'.length);
  const slash = rest.indexOf('/');
  if (slash < 0) return { incr: false, key: rest };
  if (rest.slice(slash) === '/incr') return { incr: true, key: rest.slice(0, slash) };
  return null;
}

// ---- responses ----

function send(res, status, body, type, extra) {
  const headers = { 'Content-Length': Buffer.byteLength(body) };
  if (type) headers['Content-Type'] = type;
  if (extra) Object.assign(headers, extra);
  res.writeHead(status, headers);
  res.end(body);
}

function jsonError(res, status, error, message, extra) {
  send(res, status, JSON.stringify({ error, message }), 'application/json', extra);
}

// A failure to get a connection, or the connection's loss: the database cannot serve us now (as the
// mapping of respool::http: no connection could be made, class 08, class 28, 57P01-57P03, 53300).
function unavailable(e) {
  if (e && e.poolConnectFailed) return true;
  const code = e && typeof e.code === 'string' ? e.code : '';
  if (/^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, ENOTFOUND, ...
  if (code.startsWith('08') || code.startsWith('28')) return true;
  if (['57P01', '57P02', '57P03', '53300'].includes(code)) return true;
  const m = (e && e.message) || '';
  return /Connection terminated|Client has encountered a connection error|after calling end on the pool/.test(m);
}

function databaseError(res, req, e) {
  if (unavailable(e)) {
    jsonError(res, 503, 'database_unavailable', 'the database cannot be reached', { 'Retry-After': '1' });
    return;
  }
  // Logged with the server's message and SQLSTATE; neither carries the connection's credentials.
  process.stderr.write(`${PROG}: ${req.method} ${req.url}: ${e && e.code ? e.code + ' ' : ''}${e && e.message}\n`);
  jsonError(res, 500, 'database_error', 'the database reported an error');
}

// ---- the store ----

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const ZERO = Buffer.from('0');

// The stored bytes plus one, or the 409 outcome: { value } | { error: 'not_an_integer' | 'overflow' }.
function increment(stored) {
  const text = stored.toString('latin1'); // one character per byte: the check below is on the bytes
  if (!/^[+-]?[0-9]+$/.test(text)) return { error: 'not_an_integer' };
  const significant = text.replace(/^[+-]?0*/, '');
  if (significant.length > 19) return { error: 'not_an_integer' }; // beyond 64 bits, whatever the digits
  const value = BigInt(text);
  if (value < INT64_MIN || value > INT64_MAX) return { error: 'not_an_integer' };
  if (value === INT64_MAX) return { error: 'overflow' };
  return { value: (value + 1n).toString() };
}

class Store {
  constructor(max) {
    this.pool = new Pool({ max });
    // An idle client whose connection fails emits 'error' on the pool; without a listener that would
    // end the process. The pool has already dropped the client.
    this.pool.on('error', (e) => process.stderr.write(`${PROG}: idle client: ${e.message}\n`));
    this.schemaReady = false;
    this.schema = null; // the creation under way
  }

  // The table exists: created once, by the first caller; a failed creation is tried again on use.
  async ensureSchema() {
    if (this.schemaReady) return;
    if (this.schema === null) {
      this.schema = this.pool
        .query('CREATE TABLE IF NOT EXISTS respool_kv (k text PRIMARY KEY, v bytea NOT NULL)')
        .catch((e) => {
          // Another process creating it at once: we meet its catalog row (23505) or table (42P07).
          if (e.code !== '23505' && e.code !== '42P07') throw e;
        })
        .then(
          () => {
            this.schemaReady = true;
          },
          (e) => {
            this.schema = null;
            throw e;
          },
        );
    }
    await this.schema;
  }

  // The stored bytes, or null when absent.
  async get(key) {
    await this.ensureSchema();
    const r = await this.pool.query('SELECT v FROM respool_kv WHERE k = $1', [key]);
    return r.rows.length === 0 ? null : r.rows[0].v;
  }

  // One transaction on one connection; see increment() for the outcome.
  async incr(key) {
    await this.ensureSchema();
    let client;
    try {
      client = await this.pool.connect();
    } catch (e) {
      e.poolConnectFailed = true;
      throw e;
    }
    let broken;
    try {
      await client.query('BEGIN');
      const locked = await client.query(
        'INSERT INTO respool_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET k = excluded.k RETURNING v',
        [key, ZERO],
      );
      const next = increment(locked.rows[0].v);
      if (next.error) {
        await client.query('ROLLBACK');
        return next;
      }
      await client.query('UPDATE respool_kv SET v = $2 WHERE k = $1', [key, Buffer.from(next.value)]);
      await client.query('COMMIT');
      return next;
    } catch (e) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        broken = rollbackError; // release(err) destroys the client instead of pooling it again
      }
      throw e;
    } finally {
      client.release(broken);
    }
  }

  end() {
    return this.pool.end();
  }
}

// ---- the handler ----

async function handle(store, req, res) {
  const route = match(req.url);
  if (route === null) return jsonError(res, 404, 'not_found', 'no such path');
  const allow = route.incr ? 'POST' : 'GET';
  if (req.method !== allow) {
    return jsonError(res, 405, 'method_not_allowed', 'this path does not take that method', { Allow: allow });
  }
  if (!KEY.test(route.key)) {
    return jsonError(res, 400, 'bad_key', 'a key is 1 to 200 characters of A-Z a-z 0-9 . _ -');
  }
  try {
    if (!route.incr) {
      const value = await store.get(route.key);
      if (value === null) return jsonError(res, 404, 'not_found', 'no such key');
      return send(res, 200, value, 'application/octet-stream');
    }
    const next = await store.incr(route.key);
    if (next.error === 'not_an_integer') {
      return jsonError(res, 409, 'not_an_integer', 'the stored value is not an integer within signed 64 bits');
    }
    if (next.error === 'overflow') {
      return jsonError(res, 409, 'overflow', 'the increment would overflow signed 64 bits');
    }
    return send(res, 200, next.value, 'text/plain');
  } catch (e) {
    return databaseError(res, req, e);
  }
}

async function main() {
  const { host, port, max } = parseArgs(process.argv.slice(2));
  const store = new Store(max);
  const server = http.createServer((req, res) => {
    handle(store, req, res).catch((e) => {
      process.stderr.write(`${PROG}: ${req.method} ${req.url}: ${(e && e.stack) || e}\n`);
      if (!res.headersSent) jsonError(res, 500, 'internal_error', 'internal error');
      else res.destroy();
    });
  });

  let stopping = false;
  const stop = (signal) => {
    if (stopping) process.exit(0); // a second signal: no more waiting
    stopping = true;
    process.stderr.write(`${PROG}: ${signal}: stopping\n`);
    // Requests under way finish; idle keep-alive connections are closed now, busy ones after a grace.
    // The pool then waits for its borrowed clients; past 5 s nothing more is waited for.
    setTimeout(() => server.closeAllConnections(), 2000).unref();
    setTimeout(() => {
      process.stderr.write(`${PROG}: still closing after 5 s: exiting\n`);
      process.exit(0);
    }, 5000).unref();
    server.close(() => {
      store.end().then(
        () => process.exit(0),
        (e) => {
          process.stderr.write(`${PROG}: closing the pool: ${e.message}\n`);
          process.exit(0);
        },
      );
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  // The table at startup, before listening; when the database is not there yet, the first request
  // creates it.
  try {
    await store.ensureSchema();
  } catch (e) {
    process.stderr.write(`${PROG}: creating respool_kv at startup failed (tried again on use): ${e.message}\n`);
  }
  if (stopping) return;

  server.on('error', (e) => die(`cannot listen on ${host}:${port}: ${e.message}`));
  server.listen(port, host, () => {
    const a = server.address();
    const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    process.stdout.write(`listening on http://${shown}:${a.port}\n`);
  });
}

main().catch((e) => {
  process.stderr.write(`${PROG}: ${(e && e.stack) || e}\n`);
  process.exit(1);
});
