// BullMQ side of the side-by-side benchmark; the Node twin of ../gosystem.go.
//
//   node bench.mjs <kind> <params-json>
//
// Runs one scenario against the Redis at params.redis and prints exactly one
// JSON line, {"metrics": {...}, "note": "..."}, with the metric keys of
// ../scenario.go. Diagnostics go to stderr. Keep each procedure in step with
// its Go counterpart: the table is only fair if both do the same thing.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

const [kind, raw] = process.argv.slice(2);
if (!kind || !raw) {
  console.error('usage: node bench.mjs <kind> <params-json>');
  process.exit(2);
}
const p = JSON.parse(raw);
const sep = p.redis.lastIndexOf(':');
const host = p.redis.slice(0, sep);
const port = Number(p.redis.slice(sep + 1));

const QUEUE = 'bench';
const JOB = 'noop';
// Completed jobs are not kept, as for every system in the table.
const JOB_OPTS = { removeOnComplete: true };
const FLAG_QUIET = 1;

// A hard stop, so a stuck run fails the scenario instead of hanging the harness.
setTimeout(() => {
  console.error(`bullmq ${kind}: timed out after ${p.timeout_ms} ms`);
  process.exit(3);
}, p.timeout_ms).unref();

const connections = [];
// BullMQ 6 loads ioredis lazily and only through require(), so from an ES
// module it must be handed client instances. maxRetriesPerRequest: null is
// what BullMQ requires of a worker's connection.
function connect() {
  const c = new IORedis({ host, port, maxRetriesPerRequest: null });
  connections.push(c);
  return c;
}

// Job data mirrors the Go payload: an enqueue timestamp (monotonic ms since
// this process started), a flag word, and padding that brings the JSON up to
// payload_size bytes when that is larger than the bare fields.
function data(flags = 0, i = 0) {
  const d = { t: performance.now(), f: flags, i, p: '' };
  const pad = p.payload_size - JSON.stringify(d).length;
  if (pad > 0) d.p = 'x'.repeat(pad);
  return d;
}

function countdown(n) {
  let seen = 0;
  let resolve;
  const done = new Promise((r) => (resolve = r));
  if (n <= 0) resolve();
  return {
    done,
    tick() {
      if (++seen === n) resolve();
    },
  };
}

// fill enqueues n jobs from `workers` concurrent producers, `step` jobs per
// call: add() for step 1, addBulk() otherwise. Producers share one Queue and
// so one connection, like the Go producers share one client.
async function fill(queue, n, workers, step, mk) {
  let next = 0;
  async function producer() {
    for (;;) {
      const start = next;
      next += step;
      if (start >= n) return;
      const end = Math.min(start + step, n);
      if (step === 1) {
        await queue.add(JOB, mk(start), JOB_OPTS);
      } else {
        const jobs = [];
        for (let i = start; i < end; i++) jobs.push({ name: JOB, data: mk(i), opts: JOB_OPTS });
        await queue.addBulk(jobs);
      }
    }
  }
  await Promise.all(Array.from({ length: workers }, producer));
}

// preload fills a backlog by BullMQ's fastest path, addBulk.
function preload(queue, n, flags = 0) {
  return fill(queue, n, p.producers, p.batch_size, () => data(flags));
}

function startWorker(handle) {
  const worker = new Worker(
    QUEUE,
    async (job) => {
      handle(job.data);
    },
    { connection: connect(), concurrency: p.concurrency },
  );
  let closing = false;
  worker.on('error', (err) => {
    if (!closing) console.error('bullmq worker error:', err);
  });
  return {
    async stop() {
      closing = true;
      await worker.close();
    },
  };
}

function percentiles(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q) => s[Math.max(0, Math.min(s.length - 1, Math.ceil(q * s.length) - 1))];
  return { p50_ms: at(0.5), p99_ms: at(0.99) };
}

function rate(n, ms) {
  return { jobs_per_s: n / (ms / 1000), elapsed_s: ms / 1000 };
}

async function usedMemory(c) {
  const info = await c.info('memory');
  const m = /^used_memory:(\d+)/m.exec(info);
  if (!m) throw new Error('INFO memory: no used_memory field');
  return Number(m[1]);
}

const scenarios = {
  // Both enqueue scenarios push p.warmup jobs untimed first (warm
  // connection, script cache and JIT), as the Go runner does.
  async 'enqueue-single'(queue) {
    await fill(queue, p.warmup, p.producers, 1, () => data());
    const t0 = performance.now();
    await fill(queue, p.jobs, p.producers, 1, () => data());
    return { metrics: rate(p.jobs, performance.now() - t0) };
  },

  async 'enqueue-batch'(queue) {
    await fill(queue, p.warmup, p.producers, p.batch_size, () => data());
    const t0 = performance.now();
    await fill(queue, p.jobs, p.producers, p.batch_size, () => data());
    return { metrics: rate(p.jobs, performance.now() - t0) };
  },

  async e2e(queue) {
    await preload(queue, p.jobs);
    const done = countdown(p.jobs);
    const t0 = performance.now();
    const w = startWorker(() => done.tick());
    await done.done;
    const ms = performance.now() - t0;
    await w.stop();
    return { metrics: rate(p.jobs, ms) };
  },

  async 'idle-latency'(queue) {
    let started = null;
    const w = startWorker((d) => started(performance.now() - d.t));
    await sleep(p.settle_ms);
    const lat = [];
    for (let i = 0; i < p.jobs; i++) {
      // Armed before add(): the handler may run before add() resolves.
      const handled = new Promise((r) => (started = r));
      await queue.add(JOB, data(), JOB_OPTS);
      lat.push(await handled);
    }
    await w.stop();
    return { metrics: percentiles(lat) };
  },

  async admission(queue) {
    // The warm-up and measured jobs sit in front of the backlog, so the queue
    // holds at least `backlog` jobs for the whole measurement. The clock
    // starts after the warm-up: worker start-up and a cold JIT are not
    // billed to the per-job cost. The median of the timed windows is reported.
    const total = p.warmup + p.windows * p.jobs;
    await preload(queue, p.backlog + total);
    const thresholds = Array.from({ length: p.windows + 1 }, (_, k) => p.warmup + k * p.jobs);
    const at = [];
    const done = countdown(total);
    let seen = 0;
    const w = startWorker(() => {
      seen++;
      if (thresholds.includes(seen)) at.push(performance.now());
      done.tick();
    });
    await done.done;
    await w.stop();
    const per = [];
    for (let k = 1; k < at.length; k++) per.push(((at[k] - at[k - 1]) * 1000) / p.jobs);
    per.sort((a, b) => a - b);
    return {
      metrics: {
        us_per_job: per[Math.floor(per.length / 2)],
        us_per_job_min: per[0],
        us_per_job_max: per[per.length - 1],
        elapsed_s: (at[at.length - 1] - at[0]) / 1000,
      },
    };
  },

  async fairness(queue) {
    // BullMQ has no per-tenant partitions (groups are a BullMQ Pro feature),
    // so every tenant shares the one queue, as the scenario allows.
    await preload(queue, p.jobs);
    const busy = countdown(Math.min(2 * p.concurrency, p.jobs));
    const quiet = countdown(p.quiet_tenants);
    const waits = [];
    // Jobs started between a quiet job's enqueue and its own start, as in
    // the Go runner.
    let started = 0;
    const startedAt = new Array(p.quiet_tenants).fill(0);
    const ahead = [];
    const w = startWorker((d) => {
      started++;
      if (d.f & FLAG_QUIET) {
        waits.push(performance.now() - d.t);
        ahead.push(started - 1 - startedAt[d.i]);
        quiet.tick();
      } else {
        busy.tick();
      }
    });
    await busy.done;
    for (let i = 0; i < p.quiet_tenants; i++) {
      startedAt[i] = started;
      await queue.add(JOB, data(FLAG_QUIET, i), JOB_OPTS);
    }
    await quiet.done;
    await w.stop();
    ahead.sort((a, b) => a - b);
    const rank = Math.max(0, Math.min(ahead.length - 1, Math.ceil(0.99 * ahead.length) - 1));
    return { metrics: { ...percentiles(waits), p99_jobs_ahead: ahead[rank] } };
  },

  async memory(queue) {
    const c = connect();
    const before = await usedMemory(c);
    await preload(queue, p.jobs);
    const after = await usedMemory(c);
    return { metrics: { bytes_per_job: (after - before) / p.jobs } };
  },
};

async function main() {
  const run = scenarios[kind];
  if (!run) throw new Error(`unknown scenario kind ${JSON.stringify(kind)}`);
  const queue = new Queue(QUEUE, { connection: connect() });
  queue.on('error', (err) => console.error('bullmq queue error:', err));
  // Opening the queue (connection, version check, meta key) is not part of
  // any measurement, as opening the Go client is not.
  await queue.waitUntilReady();
  const result = await run(queue);
  await queue.close();
  await Promise.all(connections.map((c) => c.quit().catch(() => {})));
  return JSON.stringify(result) + '\n';
}

main().then(
  // Exit only once the line is flushed: stdout to a pipe is asynchronous on
  // some platforms.
  (line) => process.stdout.write(line, () => process.exit(0)),
  (err) => {
    console.error(`bullmq ${kind}:`, err);
    process.exit(1);
  },
);
