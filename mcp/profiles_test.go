package mcp_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/embed/hash"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/mcp"
	"github.com/quarry-rag/quarry/store"
)

// TestProfiles: knowledge_profiles lists what a client may use; search,
// query and ask take a profile; a client limited to a profile goes through
// it by default and can change nothing.
func TestProfiles(t *testing.T) {
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
	kb, err := quarry.New(ctx, st, quarry.WithEmbedder(emb), quarry.WithMode("keyword"), quarry.WithProfiles(
		quarry.Profile{Name: "refunds", Description: "Refund rules only", Filter: filter.Eq("sourceName", "refunds.md")},
		quarry.Profile{Name: "everything"},
	))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "", []quarry.NewDocument{
		{Text: "Refunds are paid within fourteen days.", Source: "refunds.md"},
		{Text: "Refunds for parcels lost in shipping are paid at once.", Source: "shipping.md"},
	}); err != nil {
		t.Fatal(err)
	}
	serve := func(sc mcp.Scope) *mcp.Server {
		srv, err := mcp.New(mcp.Config{KB: kb, Scope: sc, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		return srv
	}
	open := connect(t, serve(mcp.Scope{}))
	var ps mcp.ProfilesOutput
	call(t, open, mcp.ToolProfiles, map[string]any{}, &ps)
	if len(ps.Profiles) != 2 || ps.Profiles[1].Name != "refunds" || ps.Profiles[1].Filter == "" {
		t.Errorf("profiles: %+v", ps)
	}
	var out mcp.SearchOutput
	call(t, open, mcp.ToolSearch, map[string]any{"query": "refunds paid", "profile": "refunds"}, &out)
	if len(out.Results) != 1 || out.Results[0].Source != "refunds.md" {
		t.Errorf("search through refunds: %+v", out.Results)
	}
	call(t, open, mcp.ToolQuery, map[string]any{"query": "refunds paid", "profile": "everything"}, &out)
	if len(out.Results) != 2 {
		t.Errorf("query through everything: %+v", out.Results)
	}

	agent := connect(t, serve(mcp.Scope{Profiles: []string{"refunds"}}))
	call(t, agent, mcp.ToolProfiles, map[string]any{}, &ps)
	if len(ps.Profiles) != 1 || ps.Profiles[0].Name != "refunds" {
		t.Errorf("the agent's profiles: %+v", ps)
	}
	call(t, agent, mcp.ToolSearch, map[string]any{"query": "refunds paid"}, &out)
	if len(out.Results) != 1 || out.Results[0].Source != "refunds.md" {
		t.Errorf("the agent's search: %+v", out.Results)
	}
	var ans mcp.AskOutput
	call(t, agent, mcp.ToolAsk, map[string]any{"question": "When are refunds paid?"}, &ans)
	for _, c := range ans.Citations {
		if c.Source != "refunds.md" {
			t.Errorf("the agent's answer cites %s", c.Source)
		}
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{mcp.ToolSearch, map[string]any{"query": "refunds", "profile": "everything"}, "not open"},
		{mcp.ToolAddDocuments, map[string]any{"documents": []map[string]any{{"text": "planted"}}}, "profiles"},
		{mcp.ToolDelete, map[string]any{"source": "shipping.md"}, "profiles"},
		{mcp.ToolIngestStatus, map[string]any{"job_id": "any"}, "profiles"},
	} {
		if res := callRaw(t, agent, tc.tool, tc.args); !res.IsError || !strings.Contains(text(res), tc.says) {
			t.Errorf("the agent calling %s: %s", tc.tool, text(res))
		}
	}
	if n, _ := kb.Collection("").Count(ctx, nil); n != 2 {
		t.Errorf("%d passages after the agent's calls, want 2", n)
	}
}
