package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
)

func newIngestCmd(stdio IO) *cobra.Command {
	var (
		f       kbFlags
		metas   []string
		prune   bool
		watch   bool
		asJSON  bool
		every   time.Duration
		resume  bool
		sel     load.Selection
		prefix  string
		replace bool
		ocr     bool
		strict  bool
	)
	cmd := &cobra.Command{
		Use:   "ingest PATH...",
		Short: "Add files and folders to the knowledge base, re-doing only what changed",
		Long: `Add files and folders to the knowledge base.

Each file is a source. A source whose content is unchanged since the last run is skipped
without being read again; a changed one is re-chunked and re-embedded, then its old
chunks are swapped for the new ones in one transaction. Interrupting a run is safe: run
it again to finish. With --prune, files of the collection no longer under PATH are removed.`,
		Example: `  quarry ingest ./docs
  quarry ingest ./handbook --collection handbook --meta team=support --prune`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !resume {
				return flagError{fmt.Errorf("quarry ingest: give at least one file or folder, or --resume")}
			}
			if len(args) > 0 && resume {
				return flagError{fmt.Errorf("quarry ingest: --resume takes no paths: it re-runs the interrupted job's")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			meta, err := document.ParseMetaPairs(metas)
			if err != nil {
				return usageErr(fmt.Errorf("--meta: %w", err))
			}
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, !resume, ocrOption(ocr)...)
			if err != nil {
				return err
			}
			defer k.Close()
			req := quarry.IngestRequest{Paths: args, Metadata: meta, Prune: prune, Include: sel.Include, Exclude: sel.Exclude,
				Prefix: prefix, Replace: replace}
			if resume {
				if req, err = k.Interrupted(ctx); err != nil {
					return cliErr(err)
				}
				fmt.Fprintf(stdio.Err, "resuming the interrupted ingestion of %s\n", strings.Join(req.Paths, ", "))
			}
			for _, p := range req.Paths {
				if _, err := os.Stat(p); err != nil {
					return usageErr(fmt.Errorf("ingest: %w", err))
				}
			}
			req.Hierarchy = reportHierarchy(stdio, asJSON)
			for {
				rep, err := runIngest(ctx, stdio, k, req, asJSON)
				if err != nil {
					return err
				}
				if !watch {
					return rep.Verdict(strict)
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(every):
				}
			}
		},
	}
	f.register(cmd)
	cmd.Flags().StringArrayVar(&metas, "meta", nil, "metadata added to every chunk, as key=value (repeatable; numbers and true/false are typed)")
	cmd.Flags().BoolVar(&prune, "prune", false, "remove files of the collection that are no longer under the given paths")
	cmd.Flags().StringArrayVar(&sel.Include, "include", nil, "take only files matching this .gitignore-style pattern, e.g. '*.md' or 'docs/**' (repeatable; also ingest.include)")
	cmd.Flags().StringArrayVar(&sel.Exclude, "exclude", nil, "leave out files and folders matching this .gitignore-style pattern, e.g. 'drafts/' (repeatable; also ingest.exclude)")
	cmd.Flags().BoolVar(&watch, "watch", false, "keep running and re-ingest when files change (until interrupted)")
	cmd.Flags().DurationVar(&every, "watch-interval", 2*time.Second, "how often --watch looks for changes")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print progress as JSON lines")
	cmd.Flags().BoolVar(&resume, "resume", false, "re-run the last interrupted ingestion with its paths and options")
	cmd.Flags().StringVar(&prefix, "prefix", "", "name this run's sources PREFIX/path, so folders with files of the same names can share a collection")
	cmd.Flags().BoolVar(&ocr, "ocr", false, ocrUsage)
	cmd.Flags().BoolVar(&strict, "strict", false, "exit with an error when any file could not be parsed (by default only when none could be read)")
	cmd.Flags().BoolVar(&replace, "replace", false, "let these files take over source names that other files hold (refused otherwise)")
	return cmd
}

// runIngest runs one ingestion with progress on the terminal (a bar),
// as plain lines, or as JSON lines.
func runIngest(ctx context.Context, stdio IO, k *quarry.KB, req quarry.IngestRequest, asJSON bool) (*ingest.Report, error) {
	var bar *progressbar.ProgressBar
	tty := isTerminal(stdio.Err)
	var errs []string
	req.Progress = func(e ingest.Event) {
		switch {
		case asJSON:
			b, _ := json.Marshal(e)
			fmt.Fprintln(stdio.Out, string(b))
		case e.Event == "error":
			errs = append(errs, "error: "+e.Error)
			if !tty {
				fmt.Fprintf(stdio.Err, "error: %s\n", e.Error)
			}
		case e.Note != "":
			errs = append(errs, "note: "+e.Note)
			if !tty {
				fmt.Fprintf(stdio.Err, "note: %s\n", e.Note)
			}
		case e.Event == "ignored" || e.Event == "no_text":
			// A notice, not a failure: the file holds nothing to index.
			errs = append(errs, "note: "+e.Error)
			if !tty {
				fmt.Fprintf(stdio.Err, "note: %s\n", e.Error)
			}
		case tty:
			if bar == nil && e.Total > 0 {
				bar = progressbar.NewOptions(e.Total, progressbar.OptionSetWriter(stdio.Err), progressbar.OptionSetDescription("ingesting"),
					progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
			}
			if bar != nil {
				_ = bar.Set(e.Files)
				bar.Describe(fmt.Sprintf("ingesting · %d chunks · %.0f/s", e.Chunks, e.Rate))
			}
		case e.Event == "progress":
			fmt.Fprintf(stdio.Err, "%d/%d files, %d chunks, %d tokens, %.0f chunks/s, eta %.0fs\n", e.Files, e.Total, e.Chunks, e.Tokens, e.Rate, e.ETA)
		}
	}
	rep, err := k.Ingest(ctx, quarry.Developer(), req)
	if bar != nil {
		_ = bar.Finish()
	}
	if tty {
		for _, e := range errs {
			fmt.Fprintln(stdio.Err, e)
		}
	}
	if err != nil {
		return rep, cliErr(err)
	}
	if !asJSON {
		fmt.Fprintf(stdio.Out, "%d files: %d written, %d unchanged, %d pruned, %d not read, %d without text, %d failed; %d chunks (%d embedded) in %s, %.0f chunks/s\n",
			rep.Files, rep.Written, rep.Skipped, rep.Pruned, rep.Ignored, rep.NoText, rep.Failed, rep.Chunks, rep.Embedded, rep.Duration.Round(time.Millisecond), rep.ChunksPer)
		if rep.Calibrated != "" {
			fmt.Fprintf(stdio.Out, "calibrated the collection's search default: %s (quarry status shows the figures)\n", rep.Calibrated)
		}
	}
	return rep, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ocrUsage is the --ocr flag's help on every command that reads files.
const ocrUsage = "read scanned PDF pages with tesseract (Debian: apt install tesseract-ocr); a scan fails without it (also ingest.ocr = \"auto\" or \"on\")"

// ocrMode is the ingest.ocr mode --ocr asks for: on, or the setting's.
func ocrMode(on bool) string {
	if on {
		return "on"
	}
	return ""
}

// ocrOption is the knowledge base option of --ocr, none without it.
func ocrOption(on bool) []quarry.Option {
	if !on {
		return nil
	}
	return []quarry.Option{quarry.WithOCR("on")}
}
