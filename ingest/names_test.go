package ingest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// TestSameNamesAcrossFolders checks a second folder cannot silently take
// over the sources of a first one with files of the same names: the run
// is refused, naming both files; --prefix keeps both; --replace takes the
// names over; --prune of one folder leaves the other's sources; and one
// file reached by three spellings is one source.
func TestSameNamesAcrossFolders(t *testing.T) {
	base := t.TempDir()
	teamA, teamB := filepath.Join(base, "teamA"), filepath.Join(base, "teamB")
	writeTree(t, teamA, map[string]string{"README.md": "# Team A\n\nTeam A ships parcels.\n"})
	writeTree(t, teamB, map[string]string{"README.md": "# Team B\n\nTeam B answers refunds.\n", "notes.md": "# Notes\n\nB's notes.\n"})
	e := newEnv(t, t.TempDir())
	e.ingest(t, ingest.Options{}, teamA)

	_, err := ingest.Run(t.Context(), []string{teamB}, ingest.Options{Collection: e.coll, Embedder: e.emb, Loader: load.New(load.Options{})})
	if !errors.Is(err, ingest.ErrNameTaken) || !strings.Contains(err.Error(), filepath.Join(teamA, "README.md")) ||
		!strings.Contains(err.Error(), filepath.Join(teamB, "README.md")) || !strings.Contains(err.Error(), "--prefix") {
		t.Fatalf("a second folder's README.md: %v", err)
	}
	teamAText := func() int {
		hits, err := e.coll.Search(t.Context(), store.SearchRequest{Mode: store.ModeKeyword, Query: "parcels", Filter: filter.Eq("sourceName", "README.md")})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if teamAText() != 1 {
		t.Fatal("team A's README is gone after the refused run")
	}

	rep := e.ingest(t, ingest.Options{Prefix: "teamB", Prune: true}, teamB)
	if rep.Written != 2 || rep.Pruned != 0 {
		t.Errorf("--prefix --prune: %+v (team A's sources are not this run's to prune)", rep)
	}
	states, _ := e.coll.Sources(t.Context())
	var names []string
	for _, s := range states {
		names = append(names, s.Source.Name)
	}
	if strings.Join(names, ",") != "README.md,teamB/README.md,teamB/notes.md" {
		t.Errorf("sources %v", names)
	}

	rep = e.ingest(t, ingest.Options{Replace: true}, teamB)
	if rep.Written != 2 {
		t.Errorf("--replace: %+v", rep)
	}
	if teamAText() != 0 {
		t.Error("--replace kept team A's README")
	}

	// One file, three spellings.
	single := filepath.Join(base, "single")
	writeTree(t, single, map[string]string{"faq.md": "# FAQ\n\nAsk away.\n"})
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(single); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t, t.TempDir())
	for _, spelling := range []string{"faq.md", filepath.Join(single, "faq.md"), filepath.Join("..", "single", "faq.md")} {
		e2.ingest(t, ingest.Options{}, spelling)
	}
	states, _ = e2.coll.Sources(t.Context())
	if len(states) != 1 || states[0].Source != (document.Source{Type: document.SourceFile, Name: "faq.md"}) {
		t.Errorf("one file by three spellings: %+v", states)
	}
}
