package rqueuetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/rqueue"
)

// invoiceArgs are args of a second kind.
type invoiceArgs struct {
	Customer string         `msgpack:"customer"`
	Lines    map[string]int `msgpack:"lines"`
}

func (invoiceArgs) Kind() string { return "send_invoice" }

// manyLines is a map with enough keys that two encodings of it rarely agree on its order.
func manyLines() map[string]int {
	return map[string]int{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8}
}

func TestRequireEnqueuedMatches(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		k.Freeze(kitEpoch)
		ada := mustEnqueueArgs(t, k, mailArgs{To: "ada@example.com", Subject: "Welcome"},
			&rqueue.EnqueueOpts{Queue: "mail", Partition: "tenant-1", ScheduledIn: time.Hour})
		mustEnqueueArgs(t, k, mailArgs{To: "bob@example.com", Subject: "Welcome"}, nil)
		mustEnqueueArgs(t, k, invoiceArgs{Customer: "c1", Lines: manyLines()}, nil)

		f := runFake(func(ft tb) {
			hits := requireEnqueued(ft, k.Store, Enqueued{Kind: "send_email", Count: 2})
			if len(hits) != 2 || hits[0].ID > hits[1].ID {
				t.Errorf("hits = %v, want 2 jobs ordered by id", hits)
			}
			hits = requireEnqueued(ft, k.Store, Enqueued{Kind: "send_email", Queue: "mail", Partition: "tenant-1",
				ScheduledAt: kitEpoch.Add(time.Hour), State: headgate.StateScheduled})
			if len(hits) != 1 || hits[0].ID != ada.ID {
				t.Errorf("hits = %v, want only %s", hits, ada.ID)
			}
			payload, err := encodeArgs(mailArgs{To: "bob@example.com", Subject: "Welcome"})
			if err != nil {
				t.Fatal(err)
			}
			requireEnqueued(ft, k.Store, Enqueued{Kind: "send_email", Payload: payload, Queue: rqueue.QueueDefault, Count: 1})
			requireEnqueuedArgs(ft, k.Store, mailArgs{To: "ada@example.com", Subject: "Welcome"}, &Match{Queue: "mail", Count: 1})
			// Maps compare by content: msgpack encodes a map[string]int in Go's random
			// iteration order, so its bytes differ from one encoding to the next.
			for range 20 {
				requireEnqueuedArgs(ft, k.Store, invoiceArgs{Customer: "c1", Lines: manyLines()}, nil)
			}
			requireNotEnqueuedArgs(ft, k.Store, invoiceArgs{Customer: "c1", Lines: map[string]int{"a": 1}}, nil)
			requireNotEnqueued(ft, k.Store, Enqueued{Kind: "send_sms"})
			requireNotEnqueued(ft, k.Store, Enqueued{Kind: "send_email", Queue: "priority"})
			requireNotEnqueuedArgs(ft, k.Store, mailArgs{To: "eve@example.com", Subject: "Welcome"}, nil)
		})
		wantPass(t, f)
	})
}

func TestRequireEnqueuedFailureMessages(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		k.Freeze(kitEpoch)
		ns := k.Namespace()

		// An empty store says so.
		f := runFake(func(ft tb) { requireEnqueued(ft, k.Store, Enqueued{Kind: "send_email"}) })
		wantFailure(t, f, `rqueuetest.RequireEnqueued: want a job with kind "send_email"; 0 of the 0 jobs in namespace "`+ns+`" match`,
			"the store is EMPTY: nothing was enqueued at all")

		ada := mustEnqueueArgs(t, k, mailArgs{To: "ada@example.com", Subject: "Welcome"}, &rqueue.EnqueueOpts{Partition: "tenant-1"})
		bob := mustEnqueueArgs(t, k, mailArgs{To: "bob@example.com", Subject: "Welcome"}, &rqueue.EnqueueOpts{ScheduledIn: time.Minute})
		if _, err := k.Store.Enqueue(testCtx(t), headgate.Envelope{ID: "raw-json", Kind: "webhook", Payload: []byte(`{"event":"paid"}`)},
			headgate.Envelope{ID: "raw-bytes", Kind: "webhook", Payload: []byte{0xc1, 0x00, 0xff}}); err != nil {
			t.Fatal(err)
		}

		// A wrong queue: the message lists what is there, with the payloads readable.
		f = runFake(func(ft tb) { requireEnqueued(ft, k.Store, Enqueued{Kind: "send_email", Queue: "priority"}) })
		wantFailure(t, f,
			`rqueuetest.RequireEnqueued: want a job with kind "send_email", queue "priority"; 0 of the 4 jobs in namespace "`+ns+`" match`,
			"what IS enqueued (* = matches):",
			fmt.Sprintf(`      id=%s kind="send_email" queue="default" partition="tenant-1" state=available scheduled_at=2025-06-15T15:06:40.000Z payload={"subject":"Welcome","to":"ada@example.com"}`, ada.ID),
			fmt.Sprintf(`      id=%s kind="send_email" queue="default" partition="" state=scheduled scheduled_at=2025-06-15T15:07:40.000Z payload={"subject":"Welcome","to":"bob@example.com"}`, bob.ID),
			`      id=raw-bytes kind="webhook" queue="default" partition="" state=available scheduled_at=2025-06-15T15:06:40.000Z payload=0xc100ff`,
			`      id=raw-json kind="webhook" queue="default" partition="" state=available scheduled_at=2025-06-15T15:06:40.000Z payload="{\"event\":\"paid\"}"`)

		// A wrong count: the matches are marked.
		f = runFake(func(ft tb) { requireEnqueued(ft, k.Store, Enqueued{Kind: "send_email", Count: 1}) })
		wantFailure(t, f,
			`rqueuetest.RequireEnqueued: want exactly 1 job with kind "send_email"; 2 of the 4 jobs in namespace "`+ns+`" match`,
			"    * id="+ada.ID, "    * id="+bob.ID, "      id=raw-json")

		// Every matcher is described.
		f = runFake(func(ft tb) {
			requireEnqueued(ft, k.Store, Enqueued{Kind: "webhook", Queue: "hooks", Partition: "p", State: headgate.StateRetryable,
				ScheduledAt: kitEpoch, Payload: []byte(`{"event":"refunded"}`), Count: 3})
		})
		wantFailure(t, f, `want exactly 3 jobs with kind "webhook", queue "hooks", partition "p", state retryable, `+
			`scheduled at 2025-06-15T15:06:40.000Z, payload "{\"event\":\"refunded\"}"; 0 of the 4 jobs`)

		// Typed args are shown decoded.
		f = runFake(func(ft tb) {
			requireEnqueuedArgs(ft, k.Store, mailArgs{To: "eve@example.com", Subject: "Welcome"}, &Match{State: headgate.StateAvailable})
		})
		wantFailure(t, f, `rqueuetest.RequireEnqueuedArgs: want a job with kind "send_email", state available, `+
			`args {"subject":"Welcome","to":"eve@example.com"}; 0 of the 4 jobs`)

		// The Not checks list the jobs that should not be there.
		f = runFake(func(ft tb) { requireNotEnqueued(ft, k.Store, Enqueued{Kind: "send_email", Partition: "tenant-1"}) })
		wantFailure(t, f, `rqueuetest.RequireNotEnqueued: want no job with kind "send_email", partition "tenant-1"; 1 of the 4 jobs`,
			"    * id="+ada.ID, "      id="+bob.ID)
		f = runFake(func(ft tb) {
			requireNotEnqueuedArgs(ft, k.Store, mailArgs{To: "bob@example.com", Subject: "Welcome"}, nil)
		})
		wantFailure(t, f, `rqueuetest.RequireNotEnqueuedArgs: want no job with kind "send_email", `+
			`args {"subject":"Welcome","to":"bob@example.com"}; 1 of the 4 jobs`, "    * id="+bob.ID)

		// A description without a kind is a mistake in the test.
		f = runFake(func(ft tb) { requireEnqueued(ft, k.Store, Enqueued{Queue: "default"}) })
		wantFailure(t, f, "rqueuetest.RequireEnqueued: want.Kind is empty")
		f = runFake(func(ft tb) { requireNotEnqueued(ft, k.Store, Enqueued{}) })
		wantFailure(t, f, "rqueuetest.RequireNotEnqueued: want.Kind is empty")

		// So is a negative count, which would otherwise mean "at least one".
		f = runFake(func(ft tb) { requireEnqueued(ft, k.Store, Enqueued{Kind: "send_email", Count: -1}) })
		wantFailure(t, f, "rqueuetest.RequireEnqueued: want.Count is negative (-1): give the exact number of jobs, or 0 for at least one")
		f = runFake(func(ft tb) {
			requireEnqueuedArgs(ft, k.Store, mailArgs{To: "ada@example.com", Subject: "Welcome"}, &Match{Count: -2})
		})
		wantFailure(t, f, "rqueuetest.RequireEnqueuedArgs: Match.Count is negative (-2): give the exact number of jobs, or 0 for at least one")
	})
}

func TestRequireEnqueuedListsAtMost20(t *testing.T) {
	t.Parallel()
	k := New(t)
	var batch []headgate.Envelope
	for i := range 25 {
		batch = append(batch, headgate.Envelope{ID: fmt.Sprintf("job-%02d", i), Kind: "noise"})
	}
	if _, err := k.Store.Enqueue(testCtx(t), batch...); err != nil {
		t.Fatal(err)
	}
	f := runFake(func(ft tb) { requireEnqueued(ft, k.Store, Enqueued{Kind: "send_email"}) })
	wantFailure(t, f, "0 of the 25 jobs", "id=job-00 ", "id=job-19 ", "    ... and 5 more")
	if msg := f.message(); strings.Contains(msg, "id=job-20") {
		t.Errorf("the message lists more than 20 jobs:\n%s", msg)
	}

	// The jobs that match are listed first, whatever their ids: the cut does not hide
	// the job a Not check found, or the extra match of a count.
	if _, err := k.Store.Enqueue(testCtx(t), headgate.Envelope{ID: "zz-late", Kind: "send_email"}); err != nil {
		t.Fatal(err)
	}
	f = runFake(func(ft tb) { requireNotEnqueued(ft, k.Store, Enqueued{Kind: "send_email"}) })
	wantFailure(t, f, "1 of the 26 jobs", "what IS enqueued (* = matches):\n    * id=zz-late ", "      id=job-00 ",
		"    ... and 6 more")
}

func TestRequireEnqueuedStoreError(t *testing.T) {
	t.Parallel()
	s := brokenStore(t)
	f := runFake(func(ft tb) { requireEnqueued(ft, s, Enqueued{Kind: "send_email"}) })
	wantFailure(t, f, `rqueuetest.RequireEnqueued: list the jobs of namespace "broken": redis: client is closed`)
}

func TestListJobsPagesToTheEnd(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		const n = 2500 // more than two pages of ListJobs
		var want []string
		for chunk := range slices.Chunk(make([]int, n), 500) {
			batch := make([]headgate.Envelope, len(chunk))
			for i := range batch {
				id := fmt.Sprintf("job-%05d", len(want))
				want = append(want, id)
				batch[i] = headgate.Envelope{ID: id, Kind: "bulk"}
			}
			if _, err := k.Store.Enqueue(testCtx(t), batch...); err != nil {
				t.Fatal(err)
			}
		}
		jobs, err := listJobs(testCtx(t), k.Store)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(jobs))
		for i, j := range jobs {
			got[i] = j.ID
		}
		if !slices.Equal(got, want) {
			t.Errorf("listed %d jobs, want the %d enqueued, once each, ordered by id", len(got), n)
		}
	})
}

func TestRenderPayload(t *testing.T) {
	t.Parallel()
	mp := func(v any) []byte {
		b, err := encodeArgs(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty", nil, "(empty)"},
		{"struct", mp(mailArgs{To: "ada@example.com"}), `{"subject":"","to":"ada@example.com"}`},
		{"nested", mp(map[string]any{"ids": []int{1, 2}, "at": time.UnixMilli(0), "raw": []byte("hi"), "html": "<b>"}),
			`{"at":"1970-01-01T00:00:00Z","html":"<b>","ids":[1,2],"raw":"hi"}`},
		{"int keys", mp(map[int]string{2: "b", 1: "a"}), `{"1":"a","2":"b"}`},
		{"string", mp("hello"), `"hello"`},
		{"json text", []byte(`{"n":1}`), `"{\"n\":1}"`},
		{"plain text", []byte("hello world"), `"hello world"`},
		{"binary", []byte{0xc1}, "0xc1"},
		{"long text", []byte(strings.Repeat("a", 300)), `"` + strings.Repeat("a", 200) + `…"`},
		{"long binary", append([]byte{0xc1}, make([]byte, 200)...), "0xc1" + strings.Repeat("00", 99) + "… (201 bytes)"},
	} {
		if got := renderPayload(c.payload); got != c.want {
			t.Errorf("%s: renderPayload = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestEnqueueWithoutUniqueness(t *testing.T) {
	t.Parallel()
	onKits(t, func(t *testing.T, k *Kit) {
		ctx := testCtx(t)
		unique := func(id string) headgate.Envelope {
			return headgate.Envelope{ID: id, Kind: "digest", UniqueKey: "daily", UniqueWindow: time.Hour,
				UniqueReplace: headgate.ReplacePayload, UniqueDebounce: time.Minute}
		}
		jobs := []headgate.Envelope{unique("a"), unique("b")}
		res, err := EnqueueWithoutUniqueness(ctx, k.Store, jobs...)
		if err != nil {
			t.Fatalf("two holders of one key: %v", err)
		}
		if len(res) != 2 || res[0].State != headgate.StateAvailable || res[1].State != headgate.StateAvailable {
			t.Errorf("results = %+v, want both available at once (no debounce)", res)
		}
		if jobs[0].UniqueKey != "daily" || jobs[1].UniqueDebounce != time.Minute {
			t.Errorf("the caller's envelopes were changed: %+v", jobs)
		}
		RequireEnqueued(t, k.Store, Enqueued{Kind: "digest", Count: 2})

		// Only that call skipped uniqueness: the store still enforces it.
		if _, err := k.Store.Enqueue(ctx, unique("c"), unique("d")); err == nil {
			t.Errorf("a plain batch with one key twice was accepted")
		}
		// Ids stay strict.
		other := headgate.Envelope{ID: "a", Kind: "other"}
		var conflict *headgate.IDConflictError
		if _, err := EnqueueWithoutUniqueness(ctx, k.Store, other); !errors.As(err, &conflict) {
			t.Errorf("reusing id a for another kind: err = %v, want *headgate.IDConflictError", err)
		}
	})
}
