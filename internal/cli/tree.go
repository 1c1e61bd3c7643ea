package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

func newTreeCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		depth  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "tree",
		Short: "Show the knowledge hierarchy: nodes from folders, with chunk counts and triggers",
		Long: `Show the knowledge hierarchy. Ingesting a folder makes a node per subfolder (the root, top-level
folders, deeper folders); each chunk hangs under its folder's node. Each line shows a node's
own chunks, the chunks of its whole subtree and its first triggers: keywords from its
chunks' headings and code symbols. Searching with --mode auto for a trigger jumps to its node.`,
		Example: `  quarry tree --depth 2
  quarry tree --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if depth < 0 {
				return usageErr(fmt.Errorf("--depth must be 0 (everything) or more"))
			}
			ctx := cmd.Context()
			k, h, err := openHierarchy(ctx, &f)
			if err != nil {
				return err
			}
			defer k.Close()
			t, err := h.Tree(ctx)
			if err != nil {
				return err
			}
			t = t.Prune(depth)
			if asJSON {
				return writeJSON(stdio, t)
			}
			return t.Write(stdio.Out)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&depth, "depth", 0, "levels below the root to show (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tree as JSON")
	return cmd
}

// openHierarchy opens the knowledge base and its collection's hierarchy,
// without insisting on the configured embedder (reading the tree embeds
// nothing).
func openHierarchy(ctx context.Context, f *kbFlags) (*kb, *hierarchy.Hierarchy, error) {
	k, err := openKB(ctx, f, false)
	if err != nil {
		return nil, nil, err
	}
	coll, err := k.store.Collection(ctx, k.cfg.Collection)
	if errors.Is(err, store.ErrCollectionNotFound) {
		err = fmt.Errorf("collection %q does not exist yet: ingest something into it first", k.cfg.Collection)
	}
	if err != nil {
		k.Close()
		return nil, nil, err
	}
	h, err := hierarchy.Open(coll)
	if err != nil {
		k.Close()
		return nil, nil, err
	}
	return k, h, nil
}

func writeJSON(stdio IO, v any) error {
	enc := json.NewEncoder(stdio.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// updateHierarchy brings the collection's hierarchy up to what an
// ingestion of files wrote and rebuilds its links. A store without a
// hierarchy is skipped, and so is a run that changed nothing in a
// collection that has its hierarchy already (nil reports): the build reads
// every chunk.
func updateHierarchy(ctx context.Context, coll *store.Collection, files []load.Entry, rep *ingest.Report) (*hierarchy.BuildReport, *hierarchy.LinkReport, error) {
	h, err := hierarchy.Open(coll)
	if errors.Is(err, store.ErrUnsupported) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if rep != nil && rep.Written == 0 && rep.Pruned == 0 {
		nodes, err := h.Nodes(ctx)
		if err != nil {
			return nil, nil, err
		}
		if len(nodes) > 0 {
			return nil, nil, nil
		}
	}
	paths := make(map[string]string, len(files))
	for _, e := range files {
		if abs, err := filepath.Abs(e.Path); err == nil {
			paths[e.Source.Name] = abs
		}
	}
	br, err := h.Build(ctx, paths)
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge hierarchy: %w", err)
	}
	lr, err := h.RebuildLinks(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge hierarchy: %w", err)
	}
	return &br, &lr, nil
}

// reportHierarchy is the ingest command's Finish: it updates the
// hierarchy and says what changed (on stderr with --json, whose stdout
// holds only progress events).
func reportHierarchy(stdio IO, coll *store.Collection, asJSON bool) func(context.Context, []load.Entry, *ingest.Report) error {
	return func(ctx context.Context, files []load.Entry, rep *ingest.Report) error {
		start := time.Now()
		br, lr, err := updateHierarchy(ctx, coll, files, rep)
		if err != nil || br == nil {
			return err
		}
		w := stdio.Out
		if asJSON {
			w = stdio.Err
		}
		fmt.Fprintf(w, "hierarchy: %d nodes (%d new), %d chunks placed, %d links, in %s (see quarry tree)\n",
			br.Nodes, br.Created, br.Attached, lr.Total, time.Since(start).Round(time.Millisecond))
		return nil
	}
}
