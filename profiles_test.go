package quarry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
	qkeys "github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/quarrytest"
)

// profileKB is a knowledge base with a handbook of two files and an
// object, a second collection, and three profiles over them.
func profileKB(t *testing.T, opts ...quarry.Option) *quarry.KB {
	t.Helper()
	ctx := context.Background()
	kb := quarrytest.NewKB(t, append([]quarry.Option{quarry.WithCollection("handbook"), quarry.WithProfiles(
		quarry.Profile{Name: "support", Description: "published help", Collections: []string{"handbook"},
			Filter: filter.In("sourceName", "refunds.md", "p-1")},
		quarry.Profile{Name: "objects", Sources: []string{"object"}, Mode: "keyword", TopK: 1},
		quarry.Profile{Name: "elsewhere", Collections: []string{"archive"}},
	)}, opts...)...)
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "handbook", []quarry.NewDocument{
		{Text: "Refunds are paid within fourteen days.", Source: "refunds.md"},
		{Text: "Internal note: refunds over a limit need a manager.", Source: "internal.md"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.PutObjects(ctx, quarry.Developer(), "handbook", []byte(`{"id": "p-1", "title": "Refund policy object", "days": 14}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.AddDocuments(ctx, quarry.Developer(), "archive", []quarry.NewDocument{{Text: "Refunds used to take a month.", Source: "old.md"}}); err != nil {
		t.Fatal(err)
	}
	return kb
}

func sources(ps []quarry.Passage) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Source)
	}
	slices.Sort(out)
	return out
}

func TestProfileNarrowsAndDefaults(t *testing.T) {
	ctx := context.Background()
	kb := profileKB(t)
	for _, tc := range []struct {
		profile, collection string
		want                []string
		mode                string
	}{
		{"", "", []string{"internal.md", "p-1", "refunds.md"}, ""},
		{"support", "", []string{"p-1", "refunds.md"}, ""},
		{"objects", "", []string{"p-1"}, "keyword"}, // the object only, top-k 1, keyword
		{"elsewhere", "", []string{"old.md"}, ""},   // the profile's first collection
		{"objects", "archive", nil, "keyword"},      // no object there
		{"support", "handbook", []string{"p-1", "refunds.md"}, ""},
	} {
		res, err := kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "refunds", Profile: tc.profile, Collection: tc.collection})
		if err != nil {
			t.Fatalf("%s: %v", tc.profile, err)
		}
		if got := sources(res.Results); !slices.Equal(got, tc.want) {
			t.Errorf("through %q in %q: %v, want %v", tc.profile, tc.collection, got, tc.want)
		}
		if tc.mode != "" && res.Mode != tc.mode {
			t.Errorf("through %q: mode %s, want the profile's %s", tc.profile, res.Mode, tc.mode)
		}
	}
	// A request's own settings stand for the profile's, and its filter only
	// narrows the view.
	res, err := kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "refunds", Profile: "support", Mode: "hybrid", TopK: 5,
		Filter: filter.Eq("sourceType", "manual")})
	if err != nil || res.Mode != "hybrid" || !slices.Equal(sources(res.Results), []string{"refunds.md"}) {
		t.Errorf("request settings through a profile: %+v %v", res, err)
	}
	// The support profile searches the handbook only.
	if _, err := kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "refunds", Profile: "support", Collection: "archive"}); !errors.Is(err, quarry.ErrForbidden) {
		t.Errorf("support in the archive: %v, want ErrForbidden", err)
	}
	if _, err := kb.Search(ctx, quarry.Developer(), quarry.SearchRequest{Query: "refunds", Profile: "nope"}); !errors.Is(err, quarry.ErrInvalid) || !errors.Is(err, quarry.ErrNoProfile) || !strings.Contains(err.Error(), "elsewhere, objects, support") {
		t.Errorf("an unknown profile: %v", err)
	}
	ans, err := kb.Ask(ctx, quarry.Developer(), quarry.AskRequest{Question: "How long do refunds take?", Profile: "objects"})
	if err != nil || len(ans.Citations) != 1 || ans.Citations[0].Source != "p-1" || ans.Mode != "keyword" {
		t.Errorf("ask through objects: %+v %v", ans, err)
	}
}

// TestScopeLimitedToProfiles: a caller limited to profiles searches and asks
// only through them, counts only what their views hold, and does nothing
// else with the documents.
func TestScopeLimitedToProfiles(t *testing.T) {
	ctx := context.Background()
	kb := profileKB(t)
	one := quarry.Scope{Profiles: []string{"objects"}, Owner: "k1"}
	res, err := kb.Search(ctx, one, quarry.SearchRequest{Query: "refunds"})
	if err != nil || !slices.Equal(sources(res.Results), []string{"p-1"}) {
		t.Errorf("the only profile by default: %+v %v", res, err)
	}
	if _, err := kb.Search(ctx, one, quarry.SearchRequest{Query: "refunds", Profile: "support"}); !errors.Is(err, quarry.ErrForbidden) {
		t.Errorf("another profile: %v", err)
	}
	if _, err := kb.Query(ctx, one, quarry.SearchRequest{Query: "refunds"}); err != nil {
		t.Errorf("query through the profile: %v", err)
	}
	if _, err := kb.Ask(ctx, one, quarry.AskRequest{Question: "refunds?", Thread: "t1"}); err != nil {
		t.Errorf("ask with a thread through the profile: %v", err)
	}
	two := quarry.Scope{Profiles: []string{"objects", "support"}}
	if _, err := kb.Search(ctx, two, quarry.SearchRequest{Query: "refunds"}); !errors.Is(err, quarry.ErrInvalid) || !strings.Contains(err.Error(), "objects, support") {
		t.Errorf("two profiles, none named: %v", err)
	}
	if res, err := kb.Search(ctx, two, quarry.SearchRequest{Query: "refunds", Profile: "support"}); err != nil || len(res.Results) != 2 {
		t.Errorf("two profiles, one named: %+v %v", res, err)
	}
	// The key's own collections still hold under its profiles.
	narrow := quarry.Scope{Profiles: []string{"elsewhere"}, Collections: []string{"handbook"}}
	if _, err := kb.Search(ctx, narrow, quarry.SearchRequest{Query: "refunds"}); !errors.Is(err, quarry.ErrForbidden) {
		t.Errorf("a profile outside the key's collections: %v", err)
	}
	for name, op := range map[string]func() error{
		"delete": func() error {
			_, err := kb.Delete(ctx, one, quarry.DeleteRequest{Source: "refunds.md"})
			return err
		},
		"add": func() error {
			_, err := kb.AddDocuments(ctx, one, "handbook", []quarry.NewDocument{{Text: "x"}})
			return err
		},
		"objects": func() error {
			_, err := kb.PutObjects(ctx, one, "handbook", []byte(`{"id":"p-9"}`))
			return err
		},
		"collection info": func() error {
			_, err := kb.CollectionInfo(ctx, one, "handbook")
			return err
		},
		"tree": func() error {
			_, err := kb.Tree(ctx, one, "handbook")
			return err
		},
		"ingest paths": one.MayIngestPaths,
	} {
		if err := op(); !errors.Is(err, quarry.ErrForbidden) {
			t.Errorf("%s limited to a profile: %v, want ErrForbidden", name, err)
		}
	}
	// Listing counts what the profiles' views hold, collection by
	// collection: two passages of the handbook; in the archive, which only
	// objects reaches, nothing.
	cs, err := kb.Collections(ctx, two)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, c := range cs {
		counts[c.Name] = c.Documents
	}
	if len(counts) != 2 || counts["handbook"] != 2 || counts["archive"] != 0 {
		t.Errorf("collections through objects and support: %v, want handbook 2 (p-1 and refunds.md), archive 0 (objects reaches it, holding none)", counts)
	}
	if got := kb.Profiles(one); len(got) != 1 || got[0].Name != "objects" {
		t.Errorf("profiles a limited caller sees: %+v", got)
	}
	if got := kb.Profiles(quarry.Developer()); len(got) != 3 || got[0].Name != "elsewhere" {
		t.Errorf("profiles: %+v", got)
	}
}

func TestKeyScopeProfiles(t *testing.T) {
	for _, tc := range []struct {
		base, key, want []string
	}{
		{nil, []string{"a"}, []string{"a"}},
		{[]string{"a", "b"}, nil, []string{"a", "b"}},
		{[]string{"a", "b"}, []string{"b", "c"}, []string{"b"}},
	} {
		sc, err := quarry.KeyScope(quarry.Scope{Profiles: tc.base}, qkeys.Key{ID: "k", Permission: qkeys.PermAdmin, Profiles: tc.key})
		if err != nil || !slices.Equal(sc.Profiles, tc.want) {
			t.Errorf("%v ∩ %v = %v (%v), want %v", tc.base, tc.key, sc.Profiles, err, tc.want)
		}
		if sc.MayReachAll() || sc.MayIngestPaths() == nil {
			t.Errorf("a profile-limited admin key reaches everything: %+v", sc)
		}
	}
	// Limits that share nothing refuse everything, never mean "no limit".
	sc, _ := quarry.KeyScope(quarry.Scope{Profiles: []string{"support"}}, qkeys.Key{Permission: qkeys.PermRead, Profiles: []string{"objects"}})
	if len(sc.Profiles) != 1 || sc.Profiles[0] == "support" || sc.Profiles[0] == "objects" {
		t.Errorf("disjoint profile limits: %v", sc.Profiles)
	}
	kb := profileKB(t)
	if _, err := kb.Search(context.Background(), sc, quarry.SearchRequest{Query: "refunds"}); !errors.Is(err, quarry.ErrForbidden) || strings.Contains(err.Error(), "\x00") {
		t.Errorf("a search under disjoint limits: %v", err)
	}
}

// TestProfileModel: an answer through a profile is written by its model;
// a model an option chose stands for it.
func TestProfileModel(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "test")
	srv := quarrytest.OpenAIServer(t, func([]map[string]any) string { return "Fourteen days [1]." })
	prof := quarry.WithProfiles(quarry.Profile{Name: "writer", Model: "openai-compatible:m@" + srv.URL + "/v1", Post: []string{"dedupe"}})
	kb := profileKB(t, prof)
	ctx := context.Background()
	ans, err := kb.Ask(ctx, quarry.Developer(), quarry.AskRequest{Question: "How long do refunds take?", Profile: "writer"})
	if err != nil || ans.Extractive || ans.Answer != "Fourteen days [1]." {
		t.Fatalf("through the writer: %+v %v", ans, err)
	}
	if ans, err := kb.Ask(ctx, quarry.Developer(), quarry.AskRequest{Question: "How long do refunds take?"}); err != nil || !ans.Extractive {
		t.Errorf("without the profile the answer is extractive: %+v %v", ans, err)
	}
	given := profileKB(t, prof, quarry.WithChatModel(nil))
	if ans, err := given.Ask(ctx, quarry.Developer(), quarry.AskRequest{Question: "How long do refunds take?", Profile: "writer"}); err != nil || !ans.Extractive {
		t.Errorf("a model the program chose stands for the profile's: %+v %v", ans, err)
	}
}

func TestProfilesFromConfig(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ toml, says string }{
		{"[profiles.support]\ncollections = [\"default\"]\nfilter = \"sourceType = 'file'\"\nsources = [\"file\"]\nmode = \"keyword\"\ntop_k = 3\npost = [\"dedupe\"]\n", ""},
		{"[profiles.support]\nmode = \"semantic\"\n", "semantic"},
		{"[profiles.support]\nsources = [\"blob\"]\n", "blob"},
		{"[profiles.support]\nfilter = \"year >=\"\n", "profiles.support.filter"},
		{"[profiles.support]\npost = [\"nonsense\"]\n", "support"},
		{"[profiles.Support]\n", "profile name"},
		{"[profiles.support]\ntop_k = -1\n", "top_k"},
		{"[profiles.support]\ncolour = \"red\"\n", "colour"},
	} {
		dir := filepath.Join(t.TempDir(), ".quarry")
		kb, err := quarry.Open(ctx, dir, quarry.Create())
		if err != nil {
			t.Fatal(err)
		}
		kb.Close()
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(tc.toml), 0o644); err != nil {
			t.Fatal(err)
		}
		kb, err = quarry.Open(ctx, dir)
		if tc.says == "" {
			if err != nil {
				t.Fatalf("%q: %v", tc.toml, err)
			}
			ps := kb.Profiles(quarry.Developer())
			if len(ps) != 1 || ps[0].Mode != "keyword" || ps[0].TopK != 3 || ps[0].FilterText() == "" || ps[0].Sources[0] != "file" {
				t.Errorf("profile from config: %+v", ps)
			}
			kb.Close()
			continue
		}
		if err == nil {
			kb.Close()
			t.Errorf("%q opened", tc.toml)
		} else if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want it to name %q", tc.toml, err, tc.says)
		}
	}
}
