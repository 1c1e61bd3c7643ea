package quarry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
)

// PreviewRequest says how Preview reads and cuts files.
type PreviewRequest struct {
	// Splitter is a split.Names name ("" is auto) with its Settings.
	Splitter string
	Settings split.Settings
	// MaxFileSize skips larger files (load.DefaultMaxFileSize when 0).
	MaxFileSize int64
	// CSVPerFile reads a CSV file as one document instead of one per row.
	CSVPerFile bool
	// OCR reads scanned PDF pages: off (""), auto or on (load.NewOCR).
	OCR string
}

// Preview shows how ingestion would cut files into chunks, storing and
// embedding nothing (ingest.Preview): fn sees every chunk. The PDF engine
// it compiles is kept in the knowledge base's cache when one is found
// from the working directory, so ingestion reuses it.
func Preview(ctx context.Context, paths []string, req PreviewRequest, fn func(*document.Document) error) (*ingest.PreviewReport, error) {
	s, err := split.New(req.Splitter, req.Settings)
	if err != nil {
		return nil, invalid(err)
	}
	if req.MaxFileSize < 0 {
		return nil, invalid(fmt.Errorf("the largest file size must be 0 (the default, %d bytes) or more, got %d", load.DefaultMaxFileSize, req.MaxFileSize))
	}
	ocr, err := load.NewOCR(req.OCR)
	if err != nil {
		return nil, invalid(err)
	}
	cache := ""
	if dir, found, err := config.FindKB(".", nil); err == nil && found {
		if st, err := os.Stat(filepath.Join(dir, "cache")); err == nil && st.IsDir() {
			cache = filepath.Join(dir, "cache")
		}
	}
	l := load.New(load.Options{MaxFileSize: req.MaxFileSize, CSVPerFile: req.CSVPerFile, CacheDir: cache, OCR: ocr})
	defer l.Close()
	return ingest.Preview(ctx, l, s, paths, fn)
}

// CacheDir is the knowledge base's cache folder (the compiled PDF engine,
// uploads), or "" for a knowledge base without a directory.
func (kb *KB) CacheDir() string {
	if kb.dir == "" {
		return ""
	}
	return filepath.Join(kb.dir, "cache")
}

// MaxIndexChunks bounds the chunks one Index call returns.
const MaxIndexChunks = 1000

// IndexRequest names files to cut into chunks without storing them.
type IndexRequest struct {
	// Paths are files or folders; the caller confines them (a server to
	// its roots).
	Paths []string
	// Limit is the most chunks returned (MaxIndexChunks when 0 or more).
	Limit int
}

// IndexResult is what Index read: the chunks as passages, in file and
// reading order (Rank counts them), and every file's outcome.
type IndexResult struct {
	Chunks []Passage `json:"chunks"`
	// Truncated says the walk stopped at the limit.
	Truncated bool `json:"truncated"`
	Files     int  `json:"files" doc:"Files looked at"`
	// Skipped, NoText and Failed name the files not read, without text,
	// or that could not be read, with the reason.
	Skipped []string `json:"skipped,omitempty"`
	NoText  []string `json:"no_text,omitempty"`
	Failed  []string `json:"failed,omitempty"`
}

// errIndexFull stops an Index walk at its limit.
var errIndexFull = errors.New("index: limit reached")

// Index cuts files into chunks exactly as ingestion into this knowledge
// base would — its loader, splitter and chunk budget — and returns them
// without storing or embedding anything. Reading the server's folders is
// for scopes that reach everything and may use server paths, as ingestion
// is.
func (kb *KB) Index(ctx context.Context, sc Scope, req IndexRequest) (*IndexResult, error) {
	if !sc.MayReachAll() || sc.NoServerPaths {
		return nil, fmt.Errorf("%w: reading server folders is not open to this caller (a scope filter, or a key below admin)", ErrForbidden)
	}
	if len(req.Paths) == 0 {
		return nil, invalid(errors.New("give at least one file or folder"))
	}
	limit := req.Limit
	if limit <= 0 || limit > MaxIndexChunks {
		limit = MaxIndexChunks
	}
	s, err := ingest.NewSplitter(kb.cfg.Chunking.Splitter, kb.chunking())
	if err != nil {
		return nil, invalid(err)
	}
	res := &IndexResult{Chunks: []Passage{}}
	rep, err := ingest.Preview(ctx, kb.Loader(), s, req.Paths, func(d *document.Document) error {
		if len(res.Chunks) == limit {
			return errIndexFull
		}
		res.Chunks = append(res.Chunks, PassageOf(len(res.Chunks)+1, d))
		return nil
	})
	if errors.Is(err, errIndexFull) {
		res.Truncated, err = true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = invalid(err)
	}
	if err != nil {
		return nil, err
	}
	res.Files, res.Skipped, res.NoText, res.Failed = rep.Files, rep.Skipped, rep.NoText, rep.Failed
	return res, nil
}
