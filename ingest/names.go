package ingest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// ErrNameTaken is returned when a run would give a file a source name
// that another file already holds: ingesting teamB after teamA, both with
// a README.md, would otherwise replace team A's silently.
var ErrNameTaken = errors.New("source name taken by another file")

// originOf is the file a path names, absolute and with symbolic links
// resolved, so every spelling of one file is one origin.
func originOf(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// under reports whether file lies in one of the roots (or is one).
func under(file string, roots []string) bool {
	for _, r := range roots {
		if file == r || strings.HasPrefix(file, strings.TrimSuffix(r, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// claimNames settles the source name of each entry against what the
// collection holds: it applies the run's prefix; a file named as a root
// by another spelling ("a.md", "/docs/a.md", "../docs/a.md") keeps the
// name it was first ingested under; and a name another file holds is
// refused, naming both files and the ways out, unless the run replaces.
// It returns each source's origin.
func claimNames(entries []load.Entry, states []store.SourceState, opt Options) (map[document.Source]string, error) {
	holder := make(map[document.Source]string, len(states))
	byOrigin := make(map[string]document.Source, len(states))
	for _, s := range states {
		if s.Origin != "" {
			holder[s.Source] = s.Origin
			byOrigin[s.Origin] = s.Source
		}
	}
	origins := make(map[document.Source]string, len(entries))
	var taken []string
	for i := range entries {
		e := &entries[i]
		fileRoot := isFileRoot(e)
		if opt.Prefix != "" {
			e.Source.Name = path.Join(opt.Prefix, e.Source.Name)
		}
		origin := originOf(e.Path)
		if prev, ok := byOrigin[origin]; ok && prev.Name != e.Source.Name && fileRoot && opt.Prefix == "" {
			e.Source.Name = prev.Name // the same file, spelt another way; its type is the loader's
		}
		if h, ok := holder[e.Source]; ok && h != origin && !opt.Replace {
			taken = append(taken, fmt.Sprintf("%s would be source %q, which %s already is", e.Path, e.Source.Name, h))
		}
		origins[e.Source] = origin
	}
	if len(taken) > 0 {
		more := ""
		if len(taken) > 3 {
			more = fmt.Sprintf(" (and %d more)", len(taken)-3)
			taken = taken[:3]
		}
		return nil, fmt.Errorf("ingest: %w: %s%s: give this folder's sources names of their own with --prefix NAME, or take the names over with --replace",
			ErrNameTaken, strings.Join(taken, "; "), more)
	}
	return origins, nil
}

// claimObjects refuses a JSON file whose source name objects put through
// the API hold (KB.PutObjects names an object's passage by its id, with no
// source state): writing the file would replace them. Only new sources
// are looked at, one count each, unless the run replaces.
func claimObjects(ctx context.Context, c *store.Collection, entries []load.Entry, known map[document.Source]string, replace bool) error {
	if replace {
		return nil
	}
	for _, e := range entries {
		if _, ok := known[e.Source]; ok || e.Source.Type != document.SourceObject {
			continue
		}
		n, err := c.Count(ctx, filter.And(filter.Eq("sourceType", document.SourceObject), filter.Eq("sourceName", e.Source.Name)))
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("ingest: %w: %s would be source %q, which %d object passages added without a file hold: give this folder's sources names of their own with --prefix NAME, or take the name over with --replace",
				ErrNameTaken, e.Path, e.Source.Name, n)
		}
	}
	return nil
}

// retyped finds the run's sources whose file is stored under another
// type: a JSON file stored as a "file" source before its objects became
// "object" sources. The old source is the same file when it was recorded
// from the same origin, or from none (before origins were recorded).
func retyped(entries []load.Entry, states []store.SourceState, origins map[document.Source]string) map[document.Source]document.Source {
	stored := make(map[document.Source]string, len(states))
	for _, s := range states {
		stored[s.Source] = s.Origin
	}
	out := map[document.Source]document.Source{}
	for _, e := range entries {
		if e.Source.Type != document.SourceObject {
			continue
		}
		old := document.Source{Type: document.SourceFile, Name: e.Source.Name}
		if origin, ok := stored[old]; ok && (origin == "" || origin == origins[e.Source]) {
			out[e.Source] = old
		}
	}
	return out
}

// isFileRoot reports whether an entry was named as a root itself, not
// found in a folder: its source name is then the path as written.
func isFileRoot(e *load.Entry) bool {
	return e.Source.Name == filepath.ToSlash(filepath.Clean(e.Path))
}
