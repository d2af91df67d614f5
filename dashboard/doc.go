/*
Package dashboard is headgate's web dashboard: an http.Handler that shows one namespace
of a headgate store and, when allowed, acts on it.

	h, err := dashboard.New(rdb, &dashboard.Config{Namespace: "billing"})
	mux.Handle("/queues/", http.StripPrefix("/queues", h))

The command serves the same handler: headgate -namespace billing dashboard -addr
127.0.0.1:8080 [-allow-actions].

# Pages

The overview counts every queue's jobs by state, with its pause flag, unfinished depth,
limit, held jobs and live workers (flagging a queue with work and no live worker as
unserved), charts the last hour's throughput and failure rate from the queues' series
(headgate.Store.RecordSeries, which a worker's series duty calls once a minute) and
charts the backlog while it is open. A queue's tenants page lists its partitions with
waiting work: backlog, running, share of the running, admissions and their share in the
last hour (counted by admit.lua per minute), and waits. A queue's jobs of one state
are listed a page at a time, filtered by kind, partition, tag, fingerprint or id, newest
or oldest first. A job's page shows every field the store keeps, its payload decoded
from msgpack into JSON (Config.Redact hides what operators must not see), its progress,
output, result and error history and, unless it is running, why it is not (one sentence
per reason of inspector.Why). Further pages list the workers whose heartbeats the
namespace keeps, the cron schedules with their next and last fire, the quarantined
fingerprints, the tokens of rate classes and the namespace's policy.

Pages are rendered on the server from embedded templates and read with scripts
disabled; one small embedded script refreshes counts, draws the chart and follows
operations. The Content-Security-Policy allows only the dashboard's own script, style
and requests.

# Actions

The dashboard is read-only unless Config.AllowActions is set. Then it can retry, delete
or cancel the selected jobs or every job matching a listing's filter (after a
confirmation that shows how many; everything matching goes through the store's bulk
verbs, a batch per script call), pause and resume queues, release quarantined
fingerprints (and retry the job that crashed into one) and pause, resume or run a cron
schedule now. Each action runs as an operation
whose page shows its progress. Actions are POSTs only, refused when cross-origin
(http.CrossOriginProtection: Sec-Fetch-Site and Origin), accepted from other hosts only
when Config.Authorize decides who may do what, and each is logged with who, what and how
many jobs it changed.
*/
package dashboard
