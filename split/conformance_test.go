package split_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/internal/conformance"
	"github.com/quarry-rag/quarry/split"
)

// TestConformance runs the shared splitter cases (SEMANTICS §3).
func TestConformance(t *testing.T) {
	cases := conformance.Load(t, "splitters")
	diffs := conformance.LoadDifferences(t, "testdata/conformance_differences.json")
	conformance.Run(t, cases, diffs, checkSplitterCase)
}

func checkSplitterCase(c conformance.Case) []conformance.Result {
	var in struct {
		Splitter  string          `json:"splitter"`
		Config    json.RawMessage `json:"config"`
		Text      *string         `json:"text"`
		Documents []string        `json:"documents"`
	}
	var want struct {
		Error      *conformance.ExpectedError `json:"error"`
		Chunks     []string                   `json:"chunks"`
		ChunkCount *int                       `json:"chunk_count"`
		IDsUnique  bool                       `json:"ids_unique"`
		ParentID   bool                       `json:"parent_id_not_reused"`
	}
	if err := c.Decode(&in, &want); err != nil {
		return conformance.Of(err)
	}
	var settings split.Settings
	if err := json.Unmarshal(in.Config, &settings); err != nil {
		return conformance.Of(fmt.Errorf("config: %w", err))
	}
	s, err := split.New(in.Splitter, settings)
	if want.Error != nil {
		return conformance.Of(checkConfigError(err, want.Error))
	}
	if err != nil {
		return conformance.Of(err)
	}

	var docs []*document.Document
	if in.Text != nil {
		docs = append(docs, document.New(*in.Text))
	}
	for _, text := range in.Documents {
		docs = append(docs, document.New(text))
	}
	chunks, err := split.SplitAll(s, docs)
	if err != nil {
		return conformance.Of(err)
	}
	got := make([]string, len(chunks))
	for i, ch := range chunks {
		got[i] = ch.Content
	}
	if want.Chunks != nil && !slices.Equal(got, want.Chunks) {
		return conformance.Fail("chunks\n got %q\nwant %q", got, want.Chunks)
	}
	if want.ChunkCount != nil && len(chunks) != *want.ChunkCount {
		return conformance.Fail("got %d chunks %q, want %d", len(chunks), got, *want.ChunkCount)
	}
	seen := map[string]bool{}
	for _, ch := range chunks {
		if want.IDsUnique && seen[ch.ID] {
			return conformance.Fail("chunk id %s repeats", ch.ID)
		}
		seen[ch.ID] = true
		for _, d := range docs {
			if want.ParentID && ch.ID == d.ID {
				return conformance.Fail("chunk reuses its parent's id %s", d.ID)
			}
		}
	}
	return conformance.Pass()
}

// checkConfigError wants a *split.ConfigError naming the setting at fault:
// the first word of the expected message, which names it in every case.
func checkConfigError(err error, want *conformance.ExpectedError) error {
	if err == nil {
		return fmt.Errorf("no error, want %q", want.Message)
	}
	var ce *split.ConfigError
	if !errors.As(err, &ce) {
		return fmt.Errorf("error %v is not a *split.ConfigError", err)
	}
	param, _, _ := strings.Cut(want.Message, " ")
	if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(param)) {
		return fmt.Errorf("message %q does not name %q (expected message: %q)", err, param, want.Message)
	}
	return conformance.NamesQuoted(want.Message, err.Error())
}
