package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/quarry-rag/quarry/document"
)

// CopyReport sums up a copy of one collection.
type CopyReport struct {
	Collection string `json:"collection"`
	// Documents were written to the target; Sources is the number of
	// tracked sources written, Skipped those the target already held with
	// the same hash and chunk count (from an earlier, interrupted run).
	Documents int `json:"documents"`
	Sources   int `json:"sources"`
	Skipped   int `json:"skipped_sources"`
	// Nodes, Attachments and Links count the knowledge hierarchy copied
	// with the collection.
	Nodes       int `json:"nodes"`
	Attachments int `json:"attachments"`
	Links       int `json:"links"`
	// Settings counts the collection settings copied (its calibration);
	// SettingsLeft those the target keeps no place for: a
	// calibration left behind is measured again with quarry eval
	// --calibrate on a store that keeps settings.
	Settings     int `json:"settings"`
	SettingsLeft int `json:"settings_left,omitempty"`
	// NodesLeft counts the hierarchy's nodes not copied because the
	// target keeps no hierarchy and CopyOptions.LeaveHierarchy said so.
	NodesLeft int `json:"nodes_left,omitempty"`
}

// CopyProgress is reported as a copy goes: Done of Total documents of the
// collection have been written or found already there.
type CopyProgress struct {
	Collection string `json:"collection"`
	Done       int    `json:"done"`
	Total      int    `json:"total"`
}

// CopyOptions tune CopyCollection; the zero value is ready to use.
type CopyOptions struct {
	// Progress, when set, is called after each page and each source.
	Progress func(CopyProgress)
	// LeaveHierarchy copies a collection with a knowledge hierarchy into a
	// store that keeps none (Qdrant, Typesense…), leaving the nodes,
	// attachments and links behind (CopyReport.NodesLeft). Without it such
	// a copy is refused before anything is written: nodes people added
	// are theirs, and are not dropped unasked.
	LeaveHierarchy bool
}

// CopyCollection copies a collection — configuration, documents with their
// embeddings (nothing is embedded again), the hashes of its tracked
// sources, its knowledge hierarchy and its settings — into another store, where it is created (or must already
// match). Tracked sources are written whole, one transaction each, and a
// source the target already holds with the same hash and chunk count is
// skipped, so a copy interrupted midway resumes where it stopped; other
// documents are upserted in pages. The copy is checked by counting.
func CopyCollection(ctx context.Context, from *Collection, to *Store, opt CopyOptions) (CopyReport, error) {
	rep := CopyReport{Collection: from.Name()}
	left, err := hierarchyLeft(ctx, from, to)
	if err != nil {
		return rep, fmt.Errorf("copy %q: knowledge hierarchy: %w", from.Name(), err)
	}
	if left > 0 && !opt.LeaveHierarchy {
		return rep, fmt.Errorf("copy %q: %w: the target keeps no knowledge hierarchy, and this collection has %d nodes; copy without them only if you mean to (leave the hierarchy: quarry migrate --leave-hierarchy)",
			from.Name(), ErrUnsupported, left)
	}
	rep.NodesLeft = left
	dst, err := to.EnsureCollection(ctx, from.Config())
	if err != nil {
		return rep, err
	}
	total, err := from.Count(ctx, nil)
	if err != nil {
		return rep, err
	}
	done := 0
	progress := func(n int) {
		done += n
		if opt.Progress != nil {
			opt.Progress(CopyProgress{Collection: from.Name(), Done: done, Total: total})
		}
	}
	states, err := from.Sources(ctx)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return rep, err
	}
	tracked := make(map[document.Source]SourceState, len(states))
	for _, s := range states {
		tracked[s.Source] = s
	}
	there := map[document.Source]SourceState{}
	if len(states) > 0 {
		have, err := dst.Sources(ctx)
		if err != nil {
			return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
		}
		for _, s := range have {
			there[s.Source] = s
		}
	}
	// One pass lists each tracked source's ids and copies everything else.
	bySource := map[document.Source][]string{}
	err = from.Scan(ctx, 500, func(page []*document.Document) error {
		var loose []*document.Document
		for _, d := range page {
			src := document.Source{Type: d.SourceType, Name: d.SourceName}
			if _, ok := tracked[src]; ok {
				bySource[src] = append(bySource[src], d.ID)
				continue
			}
			loose = append(loose, d)
		}
		if err := dst.Upsert(ctx, loose); err != nil {
			return err
		}
		rep.Documents += len(loose)
		progress(len(loose))
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
	}
	for _, s := range states {
		ids := bySource[s.Source]
		if t, ok := there[s.Source]; ok && t.Hash == s.Hash && t.Chunks == len(ids) {
			rep.Skipped++
			progress(len(ids))
			continue
		}
		var docs []*document.Document
		if len(ids) > 0 {
			if docs, err = from.Get(ctx, ids); err != nil {
				return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
			}
		}
		if err := dst.ReplaceSources(ctx, []SourceUpdate{{Source: s.Source, Hash: s.Hash, Docs: docs}}); err != nil {
			return rep, fmt.Errorf("copy %q: source %s: %w", from.Name(), s.Source.Name, err)
		}
		rep.Documents += len(docs)
		rep.Sources++
		progress(len(docs))
	}
	got, err := dst.Count(ctx, nil)
	if err != nil {
		return rep, err
	}
	if got != total {
		return rep, fmt.Errorf("copy %q: the target holds %d documents, the source %d (the target had others before?)", from.Name(), got, total)
	}
	if left > 0 {
		// Left behind, as the caller asked.
	} else if err := copyHierarchy(ctx, from, to, &rep); err != nil {
		return rep, fmt.Errorf("copy %q: knowledge hierarchy: %w", from.Name(), err)
	}
	if err := copySettings(ctx, from, dst, &rep); err != nil {
		return rep, fmt.Errorf("copy %q: %w", from.Name(), err)
	}
	return rep, nil
}

// copySettings copies the collection's settings, replacing the target's
// under the same keys.
func copySettings(ctx context.Context, from, dst *Collection, rep *CopyReport) error {
	m, err := from.Settings(ctx)
	if errors.Is(err, ErrUnsupported) || len(m) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	if !dst.KeepsSettings() {
		rep.SettingsLeft = len(m)
		return nil
	}
	for k, v := range m {
		if err := dst.PutSetting(ctx, k, v); err != nil {
			return err
		}
		rep.Settings++
	}
	return nil
}

// copyHierarchy copies the collection's nodes, attachments and links.
// Nodes are matched by path, so a second run updates the nodes a first
// one made instead of adding them again; node ids are the target's own.
// A source store without a hierarchy has none to copy; a target without
// one cannot take a hierarchy that has nodes.
// hierarchyLeft is how many of the collection's hierarchy nodes a copy
// to a store that keeps no hierarchy would leave behind: 0 when the
// target keeps one or the source has none.
func hierarchyLeft(ctx context.Context, from *Collection, to *Store) (int, error) {
	if _, err := to.Hierarchy(); !errors.Is(err, ErrUnsupported) {
		return 0, nil
	}
	src, err := from.Store().Hierarchy()
	if errors.Is(err, ErrUnsupported) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	nodes, err := src.Nodes(ctx, from.Name())
	return len(nodes), err
}

func copyHierarchy(ctx context.Context, from *Collection, to *Store, rep *CopyReport) error {
	src, err := from.Store().Hierarchy()
	if errors.Is(err, ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	name := from.Name()
	nodes, err := src.Nodes(ctx, name)
	if err != nil || len(nodes) == 0 {
		return err
	}
	dst, err := to.Hierarchy()
	if err != nil {
		return fmt.Errorf("the target cannot keep its %d nodes: %w", len(nodes), err)
	}
	have, err := dst.Nodes(ctx, name)
	if err != nil {
		return err
	}
	byPath := make(map[string]int64, len(have))
	for _, n := range have {
		byPath[n.Path] = n.ID
	}
	// Parents first: a node is written once its parent has its target id.
	ids := map[int64]int64{0: 0}
	for pending := nodes; len(pending) > 0; {
		var batch, later []Node
		var olds []int64
		for _, n := range pending {
			parent, ok := ids[n.ParentID]
			if !ok {
				later = append(later, n)
				continue
			}
			olds = append(olds, n.ID)
			n.ID, n.ParentID = byPath[n.Path], parent
			batch = append(batch, n)
		}
		if len(batch) == 0 {
			return fmt.Errorf("%d nodes have no parent among the collection's nodes", len(later))
		}
		put, err := dst.PutNodes(ctx, name, batch)
		if err != nil {
			return err
		}
		for i, n := range put {
			ids[olds[i]] = n.ID
		}
		pending = later
	}
	rep.Nodes = len(nodes)
	atts, err := src.Attachments(ctx, name)
	if err != nil {
		return err
	}
	for i := range atts {
		atts[i].NodeID = ids[atts[i].NodeID]
	}
	if err := dst.Attach(ctx, name, atts, nil); err != nil {
		return err
	}
	rep.Attachments = len(atts)
	links, err := src.Links(ctx, name)
	if err != nil {
		return err
	}
	types := map[string]bool{}
	for i := range links {
		links[i].From, links[i].To = ids[links[i].From], ids[links[i].To]
		types[links[i].Type] = true
	}
	replace := make([]string, 0, len(types))
	for t := range types {
		replace = append(replace, t)
	}
	if err := dst.PutLinks(ctx, name, links, replace); err != nil {
		return err
	}
	rep.Links = len(links)
	return nil
}

// CopyJobs copies the ingestion jobs' history (the last limit jobs, or
// all when limit ≤ 0) into another store; jobs keep their ids, so copying
// again replaces them. Either store without jobs copies none.
func CopyJobs(ctx context.Context, from, to *Store, limit int) (int, error) {
	src, err := from.Jobs()
	if errors.Is(err, ErrUnsupported) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = 1 << 30
	}
	jobs, err := src.ListJobs(ctx, limit)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	dst, err := to.Jobs()
	if errors.Is(err, ErrUnsupported) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, j := range jobs {
		if err := dst.PutJob(ctx, j); err != nil {
			return 0, fmt.Errorf("copy job %s: %w", j.ID, err)
		}
	}
	return len(jobs), nil
}

// CopyThreads copies the conversation threads into another store. A
// thread the target holds with fewer turns (an interrupted copy) gets the
// rest; one it holds whole is left alone, so copying again adds nothing.
// Either store without threads copies none.
func CopyThreads(ctx context.Context, from, to *Store) (int, error) {
	src, err := from.Threads()
	if errors.Is(err, ErrUnsupported) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ids, err := src.ThreadIDs(ctx)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	dst, err := to.Threads()
	if errors.Is(err, ErrUnsupported) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	copied := 0
	for _, id := range ids {
		turns, err := src.Turns(ctx, id, 0)
		if err != nil {
			return copied, fmt.Errorf("copy thread %s: %w", id, err)
		}
		have, err := dst.Turns(ctx, id, 0)
		if err != nil && !errors.Is(err, ErrThreadNotFound) {
			return copied, fmt.Errorf("copy thread %s: %w", id, err)
		}
		if len(have) >= len(turns) {
			continue
		}
		if err := dst.AppendTurns(ctx, id, turns[len(have):]); err != nil {
			return copied, fmt.Errorf("copy thread %s: %w", id, err)
		}
		copied++
	}
	return copied, nil
}
