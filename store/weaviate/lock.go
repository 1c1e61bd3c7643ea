package weaviate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Weaviate has no conditional write: an object written twice is simply
// written twice. Its schema, though, changes through Raft, one change at
// a time, and creating a class that exists fails. A lock is therefore a
// class: {prefix}Lock_{collection}_{generation}, whose description says
// until when it holds. Taking the lock creates the next generation's
// class, which exactly one of several racing processes manages; an expired
// generation is never deleted by a waiter (two waiters could then each
// delete the other's), only passed over by creating the next one.

// lockLease bounds how long a lock holds without its holder: a process
// that dies holding it delays the others this long.
const lockLease = time.Minute

func (b *Backend) lockBase(coll string) string {
	return b.opts.Prefix + "Lock_" + classSafe(coll) + "_"
}

// lock takes the collection's lock, waiting for a holder, and returns its
// release.
func (b *Backend) lock(ctx context.Context, coll string) (func(), error) {
	base := b.lockBase(coll)
	for {
		gens, live, err := b.lockGenerations(ctx, base)
		if err != nil {
			return nil, err
		}
		if !live {
			next := 1
			if len(gens) > 0 {
				next = gens[len(gens)-1] + 1
			}
			name := base + strconv.Itoa(next)
			desc, _ := json.Marshal(map[string]int64{"expires": time.Now().Add(lockLease).UnixMilli()})
			def := map[string]any{"class": name, "description": string(desc), "vectorizer": "none", "vectorIndexType": "flat",
				"properties": []map[string]any{textProp("x", "", false, false)}}
			err := b.c.do(ctx, http.MethodPost, "/schema", nil, def, nil)
			if err == nil {
				for _, g := range gens { // expired generations are litter now
					_ = b.c.do(context.WithoutCancel(ctx), http.MethodDelete, "/schema/"+base+strconv.Itoa(g), nil, nil, nil)
				}
				return func() {
					// A release that fails is ended by the lease.
					_ = b.c.do(context.WithoutCancel(ctx), http.MethodDelete, "/schema/"+name, nil, nil, nil)
				}, nil
			}
			if !isStatus(err, http.StatusUnprocessableEntity) {
				return nil, fmt.Errorf("weaviate: lock %s: %w", coll, err)
			}
			// Another process took this generation first.
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("weaviate: waiting for the lock of %s: %w", coll, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// lockGenerations lists the lock's existing generations, oldest first,
// and whether one of them still holds.
func (b *Backend) lockGenerations(ctx context.Context, base string) ([]int, bool, error) {
	var schema struct {
		Classes []struct {
			Class       string `json:"class"`
			Description string `json:"description"`
		} `json:"classes"`
	}
	if err := b.c.do(ctx, http.MethodGet, "/schema", nil, nil, &schema); err != nil {
		return nil, false, fmt.Errorf("weaviate: lock: %w", err)
	}
	var gens []int
	live := false
	now := time.Now().UnixMilli()
	for _, c := range schema.Classes {
		rest, ok := strings.CutPrefix(c.Class, base)
		if !ok {
			continue
		}
		g, err := strconv.Atoi(rest)
		if err != nil {
			continue
		}
		gens = append(gens, g)
		var d struct {
			Expires int64 `json:"expires"`
		}
		if json.Unmarshal([]byte(c.Description), &d) == nil && d.Expires > now {
			live = true
		}
	}
	slices.Sort(gens)
	return gens, live, nil
}
