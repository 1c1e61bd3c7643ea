package quarry

import (
	"context"
	"fmt"
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
