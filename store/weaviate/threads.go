package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/store"
)

// threadsColl is the transaction namespace of conversation threads: not a
// valid collection name, so it cannot meet one.
const threadsColl = "#threads"

func (b *Backend) turnsClass() string { return b.opts.Prefix + "Turns" }
func (b *Backend) jobsClass() string  { return b.opts.Prefix + "Jobs" }

// dataClass is the class a transaction namespace writes its objects to.
func (b *Backend) dataClass(coll string) string {
	if coll == threadsColl {
		return b.turnsClass()
	}
	if strings.HasPrefix(coll, "#hier:") {
		return b.hierClass()
	}
	return b.className(coll)
}

func (b *Backend) ensureThreadClasses(ctx context.Context) error {
	for _, d := range []map[string]any{
		b.classDef(b.turnsClass(), []map[string]any{
			typedProp("thread", "text"),
			typedProp("q_key", "text"),
			typedProp("q_txn", "text"),
			typedProp("q_seq", "int"),
			textProp("body", "", false, false),
		}, false),
		b.classDef(b.jobsClass(), []map[string]any{
			typedProp("started", "int"),
			textProp("body", "", false, false),
		}, false),
	} {
		if err := b.createClass(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// storedTurn is a turn as its object's body holds it; Data is kept as
// text so it comes back byte for byte.
type storedTurn struct {
	Role    string    `json:"role"`
	Content string    `json:"content"`
	Data    *string   `json:"data,omitempty"`
	Created time.Time `json:"created"`
}

// AppendTurns implements store.ThreadStore. The turns are one transaction,
// so they appear together. A turn's number is its place in the thread:
// turns are ordered by the start of the append that wrote them, then by
// their order within it, and numbered from 1 when read.
func (b *Backend) AppendTurns(ctx context.Context, thread string, turns []store.Turn) error {
	if err := store.CheckThreadID(thread); err != nil {
		return err
	}
	if len(turns) == 0 {
		return nil
	}
	b.tidy(ctx, threadsColl)
	t, err := b.beginTxn(ctx, threadsColl)
	if err != nil {
		return err
	}
	objs := make([]object, len(turns))
	for i, turn := range turns {
		st := storedTurn{Role: turn.Role, Content: turn.Content, Created: turn.Created}
		if turn.Data != nil {
			d := string(turn.Data)
			st.Data = &d
		}
		body, err := json.Marshal(st)
		if err != nil {
			t.abort(ctx)
			return fmt.Errorf("%w: turn %d: %v", store.ErrInvalidRequest, i, err)
		}
		key := fmt.Sprintf("%016x%s%06d", t.rec.Seq, t.rec.Txn, i)
		objs[i] = object{Class: b.turnsClass(), ID: objectID("turn", thread, key), Properties: map[string]any{
			"thread": wrap(thread), "q_key": key, "q_txn": t.rec.Txn, "q_seq": t.rec.Seq, "body": string(body),
		}}
	}
	if err := b.putObjects(ctx, objs); err != nil {
		t.abort(ctx)
		return err
	}
	return t.commit(ctx, b.turnsClass(), txnRecord{})
}

// Turns implements store.ThreadStore.
func (b *Backend) Turns(ctx context.Context, thread string, limit int) ([]store.Turn, error) {
	var out []store.Turn
	err := b.read(ctx, threadsColl, func(s snapshot) error {
		out = out[:0]
		w := and(where{"path": []any{"thread"}, "operator": "Equal", "valueText": wrap(thread)}, s.visible(false))
		return b.sorted(ctx, b.turnsClass(), w, "q_key", "body", func(rows []map[string]json.RawMessage) error {
			for _, r := range rows {
				var st storedTurn
				if err := json.Unmarshal([]byte(text(r, "body")), &st); err != nil {
					return fmt.Errorf("weaviate: thread %s: turn: %w", thread, err)
				}
				turn := store.Turn{Seq: len(out) + 1, Role: st.Role, Content: st.Content, Created: st.Created}
				if st.Data != nil {
					turn.Data = json.RawMessage(*st.Data)
				}
				out = append(out, turn)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %q", store.ErrThreadNotFound, thread)
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// DeleteThread implements store.ThreadStore: a transaction that hides the
// thread's turns at once; they are deleted with the cleanup.
func (b *Backend) DeleteThread(ctx context.Context, thread string) error {
	b.tidy(ctx, threadsColl)
	t, err := b.beginTxn(ctx, threadsColl)
	if err != nil {
		return err
	}
	return t.commit(ctx, b.turnsClass(), txnRecord{Where: where{"path": []any{"thread"}, "operator": "Equal", "valueText": wrap(thread)}})
}

// ThreadIDs implements store.ThreadStore.
func (b *Backend) ThreadIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := b.read(ctx, threadsColl, func(s snapshot) error {
		ws, err := gqlValue(s.visible(false))
		if err != nil {
			return err
		}
		var data struct {
			Aggregate map[string][]struct {
				GroupedBy struct {
					Value string `json:"value"`
				} `json:"groupedBy"`
			} `json:"Aggregate"`
		}
		q := fmt.Sprintf(`{Aggregate{%s(where:%s,groupBy:["thread"],limit:%d){groupedBy{value}}}}`, b.turnsClass(), ws, maxResults)
		if err := b.c.graphql(ctx, q, &data); err != nil {
			return err
		}
		ids = ids[:0]
		for _, g := range data.Aggregate[b.turnsClass()] {
			ids = append(ids, unwrap(g.GroupedBy.Value))
		}
		return nil
	})
	slices.Sort(ids)
	return ids, err
}
