package quarry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/quarry-rag/quarry"
)

// TestRerankSetting checks search.rerank reranks every answer, reversing
// the passages here through a TEI server, and that a collection's own
// setting turns it off.
func TestRerankSetting(t *testing.T) {
	var calls atomic.Int32
	tei := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Texts []string `json:"texts"`
		}
		if r.URL.Path != "/rerank" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type score struct {
			Index int     `json:"index"`
			Score float64 `json:"score"`
		}
		out := make([]score, len(req.Texts))
		for i := range req.Texts { // the last passage first
			out[i] = score{Index: i, Score: float64(i)}
		}
		json.NewEncoder(w).Encode(out)
	}))
	defer tei.Close()
	ctx := context.Background()
	dir := t.TempDir()
	toml := "[search]\nrerank = \"tei@" + tei.URL + "\"\n\n[collections.plain]\nrerank = \"off\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	kb, err := quarry.Open(ctx, dir, quarry.Create())
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	docs := []quarry.NewDocument{
		{Text: "Refunds are paid within fourteen days of the return.", Source: "refunds.md"},
		{Text: "Refunds for gift cards are not paid.", Source: "gift-cards.md"},
	}
	for _, name := range []string{"", "plain"} {
		if _, err := kb.Collection(name).Add(ctx, docs...); err != nil {
			t.Fatal(err)
		}
	}
	plain, err := kb.Collection("plain").Ask(ctx, "When are refunds paid?", quarry.Mode("keyword"))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Errorf("a collection with rerank off called the reranker %d times", calls.Load())
	}
	reranked, err := kb.Collection("").Ask(ctx, "When are refunds paid?", quarry.Mode("keyword"))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("the reranker was called %d times, want once", calls.Load())
	}
	// The reranker's scores (the passage's index) replace BM25's.
	if len(plain.Citations) == 0 || len(reranked.Citations) == 0 {
		t.Fatalf("no citations: %v / %v", plain.Citations, reranked.Citations)
	}
	for _, c := range reranked.Citations {
		if c.Score != 0 && c.Score != 1 {
			t.Errorf("reranked citation %s scored %v, not by the reranker", c.Source, c.Score)
		}
	}
	for _, c := range plain.Citations {
		if c.Score == 0 || c.Score == 1 {
			t.Errorf("plain citation %s scored %v, as if reranked", c.Source, c.Score)
		}
	}
}

func TestRerankSettingChecked(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("[collections.docs]\nrerank = \"nosuch\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := quarry.Open(context.Background(), dir, quarry.Create()); !errors.Is(err, quarry.ErrInvalid) {
		t.Errorf("an unknown reranker opened: %v", err)
	}
}
