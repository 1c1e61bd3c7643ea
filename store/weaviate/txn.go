package weaviate

// Atomic batches on an engine that writes object by object.
//
// Every write (an upsert, a source replacement, a delete by filter) is a
// transaction T with a sequence number s (microseconds at its start, made
// unique per process). Its objects are new versions: their ids are made
// from the chunk id and T, and they carry q_txn = T and q_seq = s, so an
// older version of the same chunk stays readable until T commits. A record
// object in the transactions class tells T's state:
//
//	pending → committed → done        (or pending → aborted)
//
// Writing the record as committed is the commit point, and it lists what T
// supersedes: chunk ids, whole sources, a delete's filter. Older versions
// of those are deleted later (cleanupDelay after the commit, by whichever
// writer of the collection tidies next), and the record then becomes done;
// done and aborted records are removed after recordGrace.
//
// A read first lists the collection's records and turns them into a
// visibility filter that it ANDs to its own:
//
//   - objects of transactions begun after the read's bound (its start less
//     boundMargin) are hidden, except those of transactions the list shows
//     committed or done — so a writer reads its own writes at once;
//   - objects of pending and aborted transactions are hidden;
//   - for each committed transaction, the older versions it supersedes are
//     hidden.
//
// A reader therefore never sees part of a batch, and never sees both a
// source's old chunks and its new ones. Nothing is deleted until
// cleanupDelay after the commit that made it invisible, and a read taking
// longer than half of that starts again, so no read's view loses an
// object underneath it. A crash before the commit leaves a pending
// transaction whose objects nobody sees, aborted after pendingLease; a
// crash after it leaves a committed one that the next tidy finishes.
//
// The sequence numbers come from the writers' clocks: processes writing to
// one collection need clocks in step (NTP) to within boundMargin.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

const (
	txPending   = "pending"
	txCommitted = "committed"
	txDone      = "done"
	txAborted   = "aborted"
)

const (
	// boundMargin: a read hides transactions begun less than this before
	// it (unless it sees them committed), so a transaction whose record
	// was not yet listed cannot show half its objects.
	boundMargin = time.Second
	// beginLimit: a writer whose pending record took longer than this to
	// write starts again, keeping boundMargin true.
	beginLimit = boundMargin / 2
	// cleanupDelay: superseded versions are deleted this long after the
	// commit at the earliest; reads longer than half of it start again.
	cleanupDelay = 10 * time.Second
	// recordGrace: done and aborted records are kept this long.
	recordGrace = 30 * time.Second
	// pendingLease: a pending transaction this old is aborted by the next
	// tidy; writers give up at half of it, before committing.
	pendingLease = 10 * time.Minute
	// tidyEvery: how often one process tidies a collection's records.
	tidyEvery = 2 * time.Second
)

// txnRecord is a transaction's record.
type txnRecord struct {
	Txn     string `json:"txn"`
	State   string `json:"state"`
	Seq     int64  `json:"seq"`
	At      int64  `json:"at"` // Unix milliseconds of the last state change
	Deleted int    `json:"deleted,omitempty"`
	// What the transaction supersedes, set when it commits: versions of
	// these chunks, all chunks and states of these sources, states alone
	// of these sources (a delete forgets its sources' hashes), and chunks
	// matching this filter (a delete).
	Chunks  []string `json:"chunks,omitempty"`
	Sources []string `json:"sources,omitempty"`
	States  []string `json:"states,omitempty"`
	Where   where    `json:"where,omitempty"`
}

func (r txnRecord) supersedes() bool {
	return len(r.Chunks) > 0 || len(r.Sources) > 0 || len(r.States) > 0 || r.Where != nil
}

func nowMicros() int64 { return time.Now().UnixMicro() }

// nextSeq hands out a sequence number: the clock, made strictly
// increasing within the process.
func (b *Backend) nextSeq() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := nowMicros()
	if s <= b.lastSeq {
		s = b.lastSeq + 1
	}
	b.lastSeq = s
	return s
}

func newTxnID(seq int64) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%016x", seq) + hex.EncodeToString(r[:])
}

// putRecord writes a transaction's record.
func (b *Backend) putRecord(ctx context.Context, coll string, r txnRecord) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("weaviate: encode transaction record: %w", err)
	}
	return b.putObjects(ctx, []object{{
		Class: b.txnsClass(),
		ID:    objectID(b.opts.Prefix, "txn", coll, r.Txn),
		Properties: map[string]any{
			"coll": coll, "txn": r.Txn, "state": r.State, "body": string(body),
		},
	}})
}

func (b *Backend) deleteRecord(ctx context.Context, coll, txn string) error {
	return b.deleteObject(ctx, b.txnsClass(), objectID(b.opts.Prefix, "txn", coll, txn))
}

// records lists a collection's transaction records.
func (b *Backend) records(ctx context.Context, coll string) (map[string]txnRecord, error) {
	var data struct {
		Get map[string][]struct {
			Body string `json:"body"`
		} `json:"Get"`
	}
	w, _ := gqlValue(where{"path": []any{"coll"}, "operator": "Equal", "valueText": coll})
	q := fmt.Sprintf(`{Get{%s(where:%s,limit:10000%s){body}}}`, b.txnsClass(), w, b.gqlConsistency())
	if err := b.c.graphql(ctx, q, &data); err != nil {
		return nil, fmt.Errorf("weaviate: list transactions of %q: %w", coll, err)
	}
	out := map[string]txnRecord{}
	for _, o := range data.Get[b.txnsClass()] {
		var r txnRecord
		dec := json.NewDecoder(strings.NewReader(o.Body))
		dec.UseNumber() // a delete's filter keeps its integers integers
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("weaviate: transaction record of %q: %w", coll, err)
		}
		out[r.Txn] = r
	}
	return out, nil
}

// snapshot is what a read sees: the records listed at its start.
type snapshot struct {
	started time.Time
	bound   int64 // transactions begun after this are hidden unless listed as committed
	recs    map[string]txnRecord
}

// snapshot starts a read: it lists the records now.
func (b *Backend) snapshot(ctx context.Context, coll string) (snapshot, error) {
	started := time.Now()
	recs, err := b.records(ctx, coll)
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{started: started, bound: started.Add(-boundMargin).UnixMicro(), recs: recs}, nil
}

// visible is the filter of the objects this snapshot sees in a collection's
// class (states false) or in the sources class (states true).
func (s snapshot) visible(states bool) where {
	var recent, hidden []any
	var parts []where
	for _, r := range s.recs {
		switch r.State {
		case txPending, txAborted:
			if r.Seq <= s.bound {
				hidden = append(hidden, r.Txn)
			}
		case txCommitted, txDone:
			if r.Seq > s.bound {
				recent = append(recent, r.Txn)
			}
			if r.State == txCommitted && r.supersedes() {
				if w := supersededBy(r, states); w != nil {
					parts = append(parts, where{"operator": "Not", "operands": []any{w}})
				}
			}
		}
	}
	bound := where{"path": []any{"q_seq"}, "operator": "LessThanEqual", "valueInt": s.bound}
	if len(recent) > 0 {
		bound = where{"operator": "Or", "operands": []any{bound,
			where{"path": []any{"q_txn"}, "operator": "ContainsAny", "valueTextArray": recent}}}
	}
	parts = append(parts, bound)
	if len(hidden) > 0 {
		parts = append(parts, where{"operator": "Not", "operands": []any{
			where{"path": []any{"q_txn"}, "operator": "ContainsAny", "valueTextArray": hidden}}})
	}
	return and(parts...)
}

// supersededBy matches the older versions a committed transaction
// replaces: in a collection's class (states false) or the sources class.
func supersededBy(r txnRecord, states bool) where {
	var alts []any
	if states {
		keys := append(append([]string{}, r.Sources...), r.States...)
		if len(keys) == 0 {
			return nil
		}
		alts = append(alts, where{"path": []any{"q_source"}, "operator": "ContainsAny", "valueTextArray": wrapAll(keys)})
	} else {
		if len(r.Chunks) > 0 {
			alts = append(alts, where{"path": []any{"q_chunk"}, "operator": "ContainsAny", "valueTextArray": wrapAll(r.Chunks)})
		}
		if len(r.Sources) > 0 {
			alts = append(alts, where{"path": []any{"q_source"}, "operator": "ContainsAny", "valueTextArray": wrapAll(r.Sources)})
		}
		if r.Where != nil {
			alts = append(alts, r.Where)
		}
		if len(alts) == 0 {
			return nil
		}
	}
	older := where{"path": []any{"q_seq"}, "operator": "LessThan", "valueInt": r.Seq}
	if len(alts) == 1 {
		return and(older, alts[0].(where))
	}
	return and(older, where{"operator": "Or", "operands": alts})
}

// read runs fn over a snapshot, starting again when fn took so long that
// a cleanup may have deleted what the snapshot still shows.
func (b *Backend) read(ctx context.Context, coll string, fn func(s snapshot) error) error {
	for attempt := 0; ; attempt++ {
		s, err := b.snapshot(ctx, coll)
		if err != nil {
			return err
		}
		if err := fn(s); err != nil {
			return err
		}
		if time.Since(s.started) < cleanupDelay/2 {
			return nil
		}
		if attempt == 3 {
			return errConflict
		}
	}
}

// txn is a write in progress.
type txn struct {
	b     *Backend
	coll  string
	rec   txnRecord
	begun time.Time
}

// beginTxn writes a pending record and returns the transaction.
func (b *Backend) beginTxn(ctx context.Context, coll string) (*txn, error) {
	for attempt := 0; attempt < 3; attempt++ {
		begun := time.Now()
		seq := b.nextSeq()
		t := &txn{b: b, coll: coll, begun: begun, rec: txnRecord{Txn: newTxnID(seq), State: txPending, Seq: seq, At: begun.UnixMilli()}}
		if err := b.putRecord(ctx, coll, t.rec); err != nil {
			return nil, err
		}
		if time.Since(begun) <= beginLimit {
			return t, nil
		}
		t.abort(ctx) // too slow to keep boundMargin: readers may not have listed it
	}
	return nil, fmt.Errorf("weaviate: could not start a write within %v three times: the server is overloaded", beginLimit)
}

// commit makes the transaction visible. sup holds what it supersedes;
// when none of that exists, the transaction is done at once and needs no
// cleanup.
func (t *txn) commit(ctx context.Context, class string, sup txnRecord) error {
	if time.Since(t.begun) > pendingLease/2 {
		t.abort(ctx)
		return fmt.Errorf("weaviate: the write took longer than %v and was abandoned", pendingLease/2)
	}
	t.rec.Chunks, t.rec.Sources, t.rec.States, t.rec.Where = sup.Chunks, sup.Sources, sup.States, sup.Where
	t.rec.State = txDone
	if t.rec.supersedes() {
		n, err := t.b.countOlder(ctx, t.coll, class, t.rec)
		if err != nil {
			t.abort(ctx)
			return err
		}
		if n > 0 {
			t.rec.State = txCommitted
		}
	}
	if t.rec.State == txDone {
		t.rec.Chunks, t.rec.Sources, t.rec.States, t.rec.Where = nil, nil, nil, nil
	}
	t.rec.At = time.Now().UnixMilli()
	if err := t.b.putRecord(ctx, t.coll, t.rec); err != nil {
		// Whether the commit landed is unknown: the next tidy aborts the
		// transaction if it did not.
		return fmt.Errorf("weaviate: commit: %w", err)
	}
	return nil
}

// countOlder counts the versions a transaction would supersede, in the
// collection's class and in the sources class.
func (b *Backend) countOlder(ctx context.Context, coll, class string, r txnRecord) (int, error) {
	total := 0
	for _, c := range []struct {
		class  string
		states bool
	}{{class, false}, {b.sourcesClass(), true}} {
		w := supersededBy(r, c.states)
		if w == nil {
			continue
		}
		if c.states {
			w = and(where{"path": []any{"coll"}, "operator": "Equal", "valueText": coll}, w)
		}
		n, err := b.aggregateCount(ctx, c.class, w)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// abort marks the transaction aborted and deletes what it wrote; what a
// failure leaves behind stays invisible and the next tidy finishes it.
func (t *txn) abort(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	t.rec.State, t.rec.At = txAborted, time.Now().UnixMilli()
	if err := t.b.putRecord(ctx, t.coll, t.rec); err != nil {
		slog.Warn("weaviate: could not mark a failed write aborted; it stays invisible until its lease ends", "collection", t.coll, "txn", t.rec.Txn, "err", err)
		return
	}
	t.b.purge(ctx, t.coll, t.rec.Txn)
}

// purge deletes a transaction's objects.
func (b *Backend) purge(ctx context.Context, coll, txnID string) {
	class := b.dataClass(coll)
	own := where{"path": []any{"q_txn"}, "operator": "Equal", "valueText": txnID}
	for _, cl := range []string{class, b.sourcesClass()} {
		if _, err := b.deleteWhere(ctx, cl, own); err != nil {
			slog.Warn("weaviate: could not delete an aborted write's objects; the next tidy retries", "collection", coll, "txn", txnID, "err", err)
		}
	}
}

// tidy finishes what transactions left: it deletes the versions committed
// transactions superseded (once cleanupDelay has passed), aborts pending
// ones past their lease and removes old records. Writers call it; it runs
// at most every tidyEvery per collection and process.
func (b *Backend) tidy(ctx context.Context, coll string) {
	b.mu.Lock()
	if time.Since(b.janitors[coll]) < tidyEvery {
		b.mu.Unlock()
		return
	}
	b.janitors[coll] = time.Now()
	b.mu.Unlock()
	recs, err := b.records(ctx, coll)
	if err != nil {
		slog.Warn("weaviate: tidy: list transactions", "collection", coll, "err", err)
		return
	}
	now := time.Now()
	for _, r := range recs {
		age := now.Sub(time.UnixMilli(r.At))
		var err error
		switch {
		case r.State == txCommitted && age > cleanupDelay:
			err = b.cleanup(ctx, coll, r)
		case r.State == txPending && age > pendingLease:
			t := &txn{b: b, coll: coll, rec: r}
			t.abort(ctx)
		case (r.State == txDone || r.State == txAborted) && age > recordGrace:
			if r.State == txAborted {
				b.purge(ctx, coll, r.Txn)
			}
			err = b.deleteRecord(ctx, coll, r.Txn)
		}
		if err != nil {
			slog.Warn("weaviate: tidy", "collection", coll, "txn", r.Txn, "err", err)
		}
	}
}

// cleanup deletes the versions a committed transaction superseded and
// marks it done.
func (b *Backend) cleanup(ctx context.Context, coll string, r txnRecord) error {
	deleted := 0
	if w := supersededBy(r, false); w != nil {
		n, err := b.deleteWhere(ctx, b.dataClass(coll), w)
		if err != nil {
			return err
		}
		deleted += n
	}
	if w := supersededBy(r, true); w != nil {
		w = and(where{"path": []any{"coll"}, "operator": "Equal", "valueText": coll}, w)
		if _, err := b.deleteWhere(ctx, b.sourcesClass(), w); err != nil {
			return err
		}
	}
	r.State, r.At, r.Deleted = txDone, time.Now().UnixMilli(), deleted
	r.Chunks, r.Sources, r.States, r.Where = nil, nil, nil, nil
	return b.putRecord(ctx, coll, r)
}
