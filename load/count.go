package load

import (
	"context"
	"fmt"
	"slices"

	"github.com/quarry-rag/quarry/document"
)

// Entry is a file a walk reads, with its source identity.
type Entry struct {
	Path   string
	Source document.Source
	// at is how the file is opened when it is read: confined to the
	// listed root, so what is read is what the listing checked.
	at opener
}

// Selection narrows the files a walk of folders takes, in .gitignore
// syntax, matched against paths relative to the folder walked: Exclude
// drops what matches (a folder with all below it); with Include, only
// files that match one of its patterns are taken. A file named as a root
// itself is always taken.
type Selection struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// Plus is s with t's patterns after its own: a request's or a command
// line's narrowing on top of the configured one.
func (s Selection) Plus(t Selection) Selection {
	return Selection{Include: append(slices.Clone(s.Include), t.Include...), Exclude: append(slices.Clone(s.Exclude), t.Exclude...)}
}

// Check reports a pattern that matches nothing (empty, or a comment), so
// callers can refuse it before any work.
func (s Selection) Check() error {
	_, _, err := s.rules()
	return err
}

// rules compiles a selection; an empty or comment-only pattern is an error.
func (s Selection) rules() (include, exclude []ignoreRule, err error) {
	for _, set := range []struct {
		pats []string
		out  *[]ignoreRule
		what string
	}{{s.Include, &include, "include"}, {s.Exclude, &exclude, "exclude"}} {
		for _, p := range set.pats {
			rs := parseGitignore("", []byte(p))
			if len(rs) == 0 {
				return nil, nil, fmt.Errorf("%s pattern %q matches nothing: give a .gitignore pattern such as '*.md' or 'drafts/'", set.what, p)
			}
			*set.out = append(*set.out, rs...)
		}
	}
	return include, exclude, nil
}

// Files lists the files Walk reads under roots, in Walk's order, without
// reading them. Two roots that give the same source name are an error
// naming both files.
func (l *Loader) Files(roots []string) ([]Entry, error) {
	return l.Select(roots, Selection{})
}

// Select is Files narrowed by a selection.
func (l *Loader) Select(roots []string, sel Selection) ([]Entry, error) {
	out, _, err := l.List(roots, sel)
	return out, err
}

// List is Select that also returns the folders left out for their name
// (Options.SkipFolders), so the caller can say so.
func (l *Loader) List(roots []string, sel Selection) ([]Entry, []string, error) {
	include, exclude, err := sel.rules()
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]string{} // source name → path
	var out []Entry
	var leftOut []string
	for _, r := range roots {
		files, left, err := l.list(r, include, exclude)
		if err != nil {
			return nil, nil, err
		}
		leftOut = append(leftOut, left...)
		for _, f := range files {
			if prev, dup := seen[f.src.Name]; dup {
				return nil, nil, fmt.Errorf("%s and %s both map to source %q: ingest them from separate roots or collections", prev, f.path, f.src.Name)
			}
			seen[f.src.Name] = f.path
			out = append(out, Entry{Path: f.path, Source: f.src, at: f.at})
		}
	}
	return out, leftOut, nil
}

// Count returns how many files Walk would read under roots.
func (l *Loader) Count(roots []string) (int, error) {
	files, err := l.Files(roots)
	return len(files), err
}

// ReadIf reads an entry's bytes and, unless skip reports their hash as
// already known, parses them with the reader for their kind. Ingestion uses
// it to skip unchanged files without parsing them; skipped reports that.
// Entries may be read concurrently.
func (l *Loader) ReadIf(ctx context.Context, e Entry, skip func(hash string) bool) (res Result, skipped bool) {
	return l.readFileIf(ctx, e.Path, e.Source, e.at, skip)
}
