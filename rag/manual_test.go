package rag_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/memory"
)

// pgManual is Debian's postgresql-doc-15 HTML manual.
const pgManual = "/usr/share/doc/postgresql-doc-15/html"

// manualQuestions are questions a user of PostgreSQL asks, each with the
// page of the manual that answers it.
var manualQuestions = []struct{ question, page string }{
	{"How do I build an index without blocking writes to the table?", "sql-createindex.html"},
	{"How do I reclaim the storage occupied by dead tuples?", "sql-vacuum.html"},
	{"How can I copy data between a file and a table?", "sql-copy.html"},
	{"How do I undo all the changes made by the current transaction?", "sql-rollback.html"},
	{"How do I rename a column of a table?", "sql-altertable.html"},
	{"How do I remove a database?", "sql-dropdatabase.html"},
	{"How do I give a role privileges on a table?", "sql-grant.html"},
	{"How do I see the execution plan of a statement?", "sql-explain.html"},
	{"How can I back up a database into a script file?", "app-pgdump.html"},
	{"How do I quickly remove all rows from a table?", "sql-truncate.html"},
}

// TestManualAnswers ingests the PostgreSQL manual and asks it ten
// questions with no chat model, as `quarry ask` does by default (hybrid
// search, ten passages): at least eight answers must cite the answering
// page, and every quoted sentence must occur in the passage it cites.
func TestManualAnswers(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("ingests a large corpus: skipped in -short and -race runs")
	}
	if _, err := os.Stat(pgManual); err != nil {
		t.Skipf("%s not found (apt-get install postgresql-doc-15): skipped", pgManual)
	}
	ctx := context.Background()
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(memory.New())
	defer s.Close()
	coll, err := s.EnsureCollection(ctx, store.CollectionConfig{Name: "manual", Model: emb.Model()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Run(ctx, []string{pgManual}, ingest.Options{Collection: coll, Embedder: emb, Loader: load.New(load.Options{})}); err != nil {
		t.Fatal(err)
	}
	p := &rag.Pipeline{
		Retriever:  &rag.CollectionRetriever{Collection: coll, Embedder: emb, Mode: store.ModeHybrid},
		TopK:       10,
		Extractive: rag.Extractive{Embedder: emb},
	}
	hits := 0
	for _, q := range manualQuestions {
		a, err := p.Ask(ctx, rag.Request{Question: q.question})
		if err != nil {
			t.Fatal(err)
		}
		checkQuotes(t, a)
		cited := false
		for _, c := range a.Citations {
			cited = cited || c.Source == q.page
		}
		if cited {
			hits++
		}
		t.Logf("%v %s\n    %s", cited, q.question, a.Text)
	}
	if hits < 8 {
		t.Errorf("%d of %d answers cite the answering page, want at least 8", hits, len(manualQuestions))
	}
	if !strings.Contains(mustAsk(t, p, manualQuestions[0].question), "CONCURRENTLY") {
		t.Error("the index question's answer does not mention CONCURRENTLY")
	}
}

func mustAsk(t *testing.T, p *rag.Pipeline, q string) string {
	t.Helper()
	a, err := p.Ask(context.Background(), rag.Request{Question: q})
	if err != nil {
		t.Fatal(err)
	}
	return a.Text
}
