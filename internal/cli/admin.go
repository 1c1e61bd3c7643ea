package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/store"
)

func newInitCmd(stdio IO) *cobra.Command {
	var (
		f          kbFlags
		embedder   string
		schemaPath string
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a knowledge base (./.quarry) and its collection",
		Long: `Create a knowledge base: a directory with config.toml and the embedded store.

The collection is created with the embedder (fixed for its life) and, with --schema, the
metadata fields it declares — which fields exist, their types, which can be filtered:
  {"fields":[{"name":"team","type":"string","required":true,"filterable":true}]}`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			schema, err := loadSchema(schemaPath)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			k, err := quarry.Init(ctx, f.kb, quarry.InitOptions{Embedder: embedder, Schema: schema}, quarry.WithStore(f.store), quarry.WithCollection(f.collection))
			if err != nil {
				return cliErr(err)
			}
			defer k.Close()
			c, err := k.CollectionInfo(ctx, quarry.Developer(), "")
			if err != nil {
				return err
			}
			dir := k.Dir()
			if asJSON {
				return writeJSON(stdio, map[string]any{"kb": dir, "collection": c.Name, "model": c.Model, "schema": c.Fields})
			}
			fmt.Fprintf(stdio.Out, "knowledge base %s: collection %q with %s\n", dir, c.Name, c.Model)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the knowledge base, collection and model as JSON")
	cmd.Flags().StringVar(&embedder, "embedder", "", "embedder for new collections: hash (offline, default), hash:DIM")
	cmd.Flags().StringVar(&schemaPath, "schema", "", "collection schema (JSON) declaring metadata fields")
	return cmd
}

func newDeleteCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		source string
		filt   string
		raw    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "delete (--source NAME | --filter F)",
		Short: "Delete chunks by source or by filter",
		Example: `  quarry delete --source guide/old-page.md
  quarry delete --filter "team = 'legacy'"`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (source == "") == (filt == "") {
				return usageErr(errors.New("give exactly one of --source or --filter"))
			}
			fe, err := parseFilterFlag(filt)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			n, err := k.Delete(ctx, quarry.Scope{AllowRawFilters: raw}, quarry.DeleteRequest{Source: source, Filter: fe})
			if err != nil {
				return cliErr(err)
			}
			if asJSON {
				return writeJSON(stdio, map[string]any{"collection": k.DefaultCollection(), "deleted": n})
			}
			if n == 0 {
				return fmt.Errorf("nothing matched in %q: no chunk was deleted", k.DefaultCollection())
			}
			fmt.Fprintf(stdio.Out, "deleted %d chunks from %q\n", n, k.DefaultCollection())
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&source, "source", "", "delete every chunk of this source name (a file's path relative to its ingest root)")
	cmd.Flags().StringVar(&filt, "filter", "", "delete the chunks matching this filter (any syntax)")
	rawFilterFlag(cmd, &raw)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"collection","deleted"} as JSON (nothing matched is then not an error)`)
	return cmd
}

// statusJSON is `quarry status --json`: the core's Status with where the
// knowledge base lives.
type statusJSON struct {
	KB        string `json:"kb"`
	Store     string `json:"store"`
	Embedder  string `json:"embedder"`
	DiskBytes int64  `json:"disk_bytes"`
	*quarry.Status
}

func newStatusCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the knowledge base: collections, sizes, models",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			full, err := k.Status(ctx, quarry.Developer())
			if err != nil {
				return err
			}
			st := statusJSON{KB: k.Dir(), Store: k.StoreURL(), Embedder: full.Model.String(), DiskBytes: k.DiskBytes(), Status: full}
			if asJSON {
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			fmt.Fprintf(stdio.Out, "knowledge base  %s\nstore           %s\nembedder        %s\ndisk            %.1f MB\n\n", st.KB, st.Store, st.Embedder, float64(st.DiskBytes)/(1<<20))
			tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "COLLECTION\tCHUNKS\tSOURCES\tBY TYPE\tMODEL\tSEARCH DEFAULT")
			for _, c := range st.Collections {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", c.Name, c.Documents, c.Sources, byType(c.ByType), c.Model, c.SearchDefault)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, c := range st.Collections {
				if cal := c.Calibration; cal != nil {
					fmt.Fprintf(stdio.Out, "\ncalibration %q  %s, measured %s on %d pseudo-queries over %d chunks (%s):\n  %s\n",
						c.Name, cal.Choice.Name, cal.At.Local().Format(time.DateTime), cal.Queries, cal.Documents, cal.Model, cal.Summary())
				}
			}
			if n := st.Jobs; n.Running+n.Failed+n.Interrupted > 0 {
				fmt.Fprintf(stdio.Out, "\nrecent jobs     %d running, %d failed, %d interrupted\n", n.Running, n.Failed, n.Interrupted)
			}
			if j := st.LastJob; j != nil {
				state := j.State
				if state == store.JobInterrupted {
					state = "interrupted (quarry ingest --resume)"
				}
				fmt.Fprintf(stdio.Out, "\nlast job        %s %s into %q: %s, %d/%d files, %d chunks, started %s\n",
					j.Kind, j.ID[:8], j.Collection, state, j.Files, j.Total, j.Chunks, j.Started.Local().Format(time.DateTime))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print status as JSON")
	return cmd
}

// byType writes passage counts by source type: "file 12, object 3".
func byType(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", t, m[t]))
	}
	return strings.Join(parts, ", ")
}
