package remote_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/retrieve/remote"
	"github.com/quarry-rag/quarry/server"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/memory"
)

// remoteQuarry is a Quarry server with two tenants' documents and keys:
// admin, and acme (held to tenant = 'acme').
func remoteQuarry(t *testing.T) (url, acmeKey string, adminKey string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	emb, err := hash.New(hash.Config{})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := document.NewSchema(
		document.Field{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true},
		document.Field{Name: "year", Type: document.TypeInteger, Filterable: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateCollection(ctx, store.CollectionConfig{Name: "handbook", Schema: schema, Model: emb.Model()})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*document.Document
	for _, d := range []struct {
		id, text, tenant string
		year             int64
	}{
		{"a1", "Acme refunds are paid within fourteen days.", "acme", 2025},
		{"a2", "Acme refunds before 2020 took a month.", "acme", 2019},
		{"g1", "Globex refunds are paid within two days.", "globex", 2025},
	} {
		doc := document.New(d.text)
		doc.ID, doc.SourceName = d.id, d.id+".md"
		if err := doc.AddMetadata(map[string]any{"tenant": d.tenant, "year": d.year}); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	if err := ingest.Add(ctx, c, emb, docs, nil); err != nil {
		t.Fatal(err)
	}
	kf, err := keys.Open(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, acmeKey, err = kf.Create(keys.Spec{Permission: keys.PermRead, Filter: "tenant = 'acme'"})
	if err != nil {
		t.Fatal(err)
	}
	_, adminKey, err = kf.Create(keys.Spec{Permission: keys.PermAdmin})
	if err != nil {
		t.Fatal(err)
	}
	kb, err := quarry.New(ctx, st, quarry.WithEmbedder(emb), quarry.WithCollection("handbook"), quarry.WithMode("keyword"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	srv, err := server.New(server.Config{KB: kb, Keys: kf, RateLimit: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return hs.URL, acmeKey, adminKey
}

func ids(docs []*document.Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

func TestRetrieve(t *testing.T) {
	url, acme, admin := remoteQuarry(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    remote.Retriever
		req  retrieve.Request
		want []string
	}{
		{"admin sees all", remote.Retriever{URL: url, Collection: "handbook", Key: admin}, retrieve.Request{Query: "refunds paid", TopK: 10}, []string{"a1", "g1", "a2"}},
		{"key scope holds", remote.Retriever{URL: url, Collection: "handbook", Key: acme}, retrieve.Request{Query: "refunds paid", TopK: 10}, []string{"a1", "a2"}},
		{"an or cannot widen the key", remote.Retriever{URL: url, Collection: "handbook", Key: acme},
			retrieve.Request{Query: "refunds", TopK: 10, Filter: filter.Or(filter.Eq("tenant", "globex"), filter.Gte("year", int64(0)))}, []string{"a1", "a2"}},
		{"source scope and run filter merge", remote.Retriever{URL: url, Collection: "handbook", Key: admin, Scope: filter.Eq("tenant", "acme")},
			retrieve.Request{Query: "refunds", TopK: 10, Filter: filter.Gte("year", int64(2020))}, []string{"a1"}},
		{"upstream scope", remote.Retriever{URL: url, Collection: "handbook", Key: admin, Mode: "hybrid"},
			retrieve.Request{Query: "refunds", TopK: 1, Scope: filter.Eq("tenant", "globex")}, []string{"g1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := tc.r.Retrieve(ctx, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(docs)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
			d := docs[0]
			if !d.Scored || d.SourceName != d.ID+".md" {
				t.Errorf("document %+v", d)
			}
			if y, ok := d.Metadata["year"].(int64); !ok || y < 2019 {
				t.Errorf("year metadata %T %v: integers must stay integers", d.Metadata["year"], d.Metadata["year"])
			}
		})
	}
}

func TestErrors(t *testing.T) {
	url, acme, _ := remoteQuarry(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    remote.Retriever
		req  retrieve.Request
		code string
	}{
		{"bad key", remote.Retriever{URL: url, Collection: "handbook", Key: "qk_000000000000_x"}, retrieve.Request{Query: "x"}, "unauthorized"},
		{"no collection", remote.Retriever{URL: url, Collection: "nope", Key: acme}, retrieve.Request{Query: "x"}, "not_found"},
		{"bad filter", remote.Retriever{URL: url, Collection: "handbook", Key: acme}, retrieve.Request{Query: "x", Filter: filter.Eq("color", "red")}, "invalid_filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.r.Retrieve(ctx, tc.req)
			var re *remote.Error
			if !errors.As(err, &re) || re.Code != tc.code {
				t.Fatalf("got %v, want code %s", err, tc.code)
			}
		})
	}
	if _, err := (&remote.Retriever{URL: "ftp://x"}).Retrieve(ctx, retrieve.Request{Query: "x"}); err == nil {
		t.Error("an ftp URL was accepted")
	}
}

// TestMultiSource answers from a remote Quarry beside a failing source:
// the failure is reported, the remote passages are cited.
func TestMultiSource(t *testing.T) {
	url, acme, _ := remoteQuarry(t)
	p := rag.Pipeline{Retriever: &retrieve.Parallel{Sources: []retrieve.Source{
		{Name: "remote", Retriever: &remote.Retriever{URL: url, Collection: "handbook", Key: acme}},
		{Name: "down", Retriever: &remote.Retriever{URL: "http://127.0.0.1:1", Collection: "handbook"}},
	}}}
	a, err := p.Ask(context.Background(), rag.Request{Question: "How fast are refunds paid?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Citations) == 0 || a.Citations[0].Source != "a1.md" {
		t.Fatalf("answer %q cites %+v", a.Text, a.Citations)
	}
	for _, c := range a.Citations {
		if c.Source == "g1.md" {
			t.Fatalf("the acme key reached globex: %+v", c)
		}
	}
}
