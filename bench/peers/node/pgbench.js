#!/usr/bin/env node
// The database bench peer of bench/peers/PROTOCOL.md on node-postgres' pg.Pool.
//
//   node pgbench.js --pool N        (the server from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE)
//
// Prints "ready" once the pool exists, then answers one line per command read from standard input:
//   run WORKLOAD CLIENTS SECONDS -> result queries=Q seconds=S p50_us=P50 p99_us=P99 errors=E
//   quit (or end of input)       -> the pool is closed, exit 0
//
// The pool is `new Pool({max: N})`, every other setting node-postgres' default (pg reads the PG*
// variables itself). Clients are CLIENTS async loops on the one event loop, as node-postgres is meant
// to be used. Single statements go through pool.query(text, values): node-postgres sends them as
// unnamed statements (nothing is prepared or cached by default); a transaction borrows one client
// with pool.connect() and gives it back with release(), as node-postgres' documentation shows.
'use strict';

const readline = require('node:readline');
const { Pool } = require('pg');

const IDS = 10000;
const WORKLOADS = new Set(['select1', 'lookup', 'txn']);

function die(message) {
  process.stderr.write(`pgbench.js: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  let pool = null;
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--pool' && i + 1 < argv.length) {
      pool = argv[++i];
    } else if (a.startsWith('--pool=')) {
      pool = a.slice('--pool='.length);
    } else {
      die(`unknown argument "${a}" (usage: node pgbench.js --pool N)`);
    }
  }
  if (pool === null) die('--pool N is required');
  if (!/^[0-9]+$/.test(pool) || Number(pool) < 1) die(`--pool takes a positive integer, not "${pool}"`);
  return { pool: Number(pool) };
}

const randomId = () => 1 + Math.floor(Math.random() * IDS);

// One query of each workload; each reads what its statement returns and throws on a wrong shape.
async function select1(pool) {
  const r = await pool.query('SELECT 1');
  if (r.rows.length !== 1 || r.rows[0]['?column?'] !== 1) throw new Error('SELECT 1 did not return 1');
}

async function lookup(pool) {
  const r = await pool.query('SELECT v FROM bench_kv WHERE id = $1', [randomId()]);
  if (r.rows.length !== 1 || typeof r.rows[0].v !== 'string') throw new Error('lookup found no row');
}

async function txn(pool) {
  const id = randomId();
  const client = await pool.connect();
  let broken;
  try {
    await client.query('BEGIN');
    await client.query('UPDATE bench_kv SET n = n + 1 WHERE id = $1', [id]);
    const r = await client.query('SELECT v, n FROM bench_kv WHERE id = $1', [id]);
    if (r.rows.length !== 1 || typeof r.rows[0].v !== 'string' || r.rows[0].n === null) {
      throw new Error('txn found no row');
    }
    await client.query('COMMIT');
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

const QUERIES = { select1, lookup, txn };

// The value at quantile q of sorted values (nearest rank: the smallest value with at least q of all
// values at or below it).
function quantile(sorted, q) {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1];
}

async function run(pool, workload, clients, seconds) {
  const query = QUERIES[workload];
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  let errors = 0;
  let firstError = null;
  const perClient = [];

  async function client() {
    const latencies = []; // nanoseconds, as Numbers
    perClient.push(latencies);
    while (process.hrtime.bigint() < deadline) {
      const t0 = process.hrtime.bigint();
      try {
        await query(pool);
        latencies.push(Number(process.hrtime.bigint() - t0));
      } catch (e) {
        ++errors;
        if (firstError === null) firstError = e;
      }
    }
  }

  const loops = [];
  for (let i = 0; i < clients; ++i) loops.push(client());
  await Promise.all(loops);
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;

  let total = 0;
  for (const l of perClient) total += l.length;
  const all = new Float64Array(total);
  let at = 0;
  for (const l of perClient) {
    all.set(l, at);
    at += l.length;
  }
  all.sort(); // typed arrays sort numerically
  if (firstError !== null) {
    process.stderr.write(`pgbench.js: ${workload}: ${errors} failed; the first: ${firstError.message}\n`);
  }
  const us = (ns) => (ns / 1000).toFixed(1);
  return (
    `result queries=${total} seconds=${elapsed.toFixed(6)} p50_us=${us(quantile(all, 0.5))} ` +
    `p99_us=${us(quantile(all, 0.99))} errors=${errors}`
  );
}

// The answer to one command line, or null for quit.
async function answer(pool, line) {
  const words = line.trim().split(/\s+/);
  if (words[0] === 'quit' && words.length === 1) return null;
  if (words[0] === 'run' && words.length === 4) {
    const [, workload, clientsText, secondsText] = words;
    if (!WORKLOADS.has(workload)) return `error unknown workload "${workload}"`;
    if (!/^[0-9]+$/.test(clientsText) || Number(clientsText) < 1) return `error bad CLIENTS "${clientsText}"`;
    const seconds = Number(secondsText);
    if (!/^(?:[0-9]+\.?[0-9]*|\.[0-9]+)$/.test(secondsText) || !Number.isFinite(seconds)) {
      return `error bad SECONDS "${secondsText}"`;
    }
    return run(pool, workload, Number(clientsText), seconds);
  }
  return `error unknown command "${line.trim()}"`;
}

async function main() {
  const { pool: max } = parseArgs(process.argv.slice(2));
  const pool = new Pool({ max });
  // An idle client whose connection fails emits 'error' on the pool; without a listener that would
  // end the process. The pool has already dropped the client.
  pool.on('error', (e) => process.stderr.write(`pgbench.js: idle client: ${e.message}\n`));
  process.stdout.write('ready\n');

  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  for await (const line of rl) {
    if (line.trim() === '') continue;
    const reply = await answer(pool, line);
    if (reply === null) break;
    process.stdout.write(reply + '\n');
  }
  rl.close();
  await pool.end();
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`pgbench.js: ${e.stack || e}\n`);
  process.exit(1);
});
