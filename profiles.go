package quarry

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/llm"
	llmspec "github.com/quarry-rag/quarry/llm/spec"
	"github.com/quarry-rag/quarry/rerank/spec"
	"github.com/quarry-rag/quarry/retrieve"
)

// Profile is an agent profile: a named way to search and ask, the
// operator's to define ([profiles.NAME] in config.toml, or WithProfiles).
// It says which collections an agent searches and which part of them (its
// view: a filter and the source types it includes), and the mode, top-k,
// chat model and post-processors its requests get when they name none. A
// request selects one by name; a key can be limited to some
// (keys.Key.Profiles), and then every search and answer it makes goes
// through one of them.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Collections the profile searches, the first when a request names
	// none; empty means the knowledge base's default and whatever else the
	// caller may use.
	Collections []string `json:"collections,omitempty"`
	// Filter is the profile's view, merged by AND under the caller's scope
	// into everything the profile retrieves; nil for none.
	Filter filter.Expr `json:"-"`
	// Sources are the source types the profile includes (file, object,
	// url, manual, conversation); empty includes all.
	Sources []string `json:"sources,omitempty"`
	// Mode, TopK, Model and Post stand for the knowledge base's search
	// mode, top-k, chat model spec and post-processors in requests through
	// the profile that name none; a request's own Post come after the
	// profile's.
	Mode  string   `json:"mode,omitempty"`
	TopK  int      `json:"top_k,omitempty"`
	Model string   `json:"model,omitempty"`
	Post  []string `json:"post,omitempty"`
}

// profileNameOK is the syntax of profile names: what a collection name may
// be, so a name is safe in a URL, a flag and a key file.
func profileNameOK(name string) bool {
	if name == "" || len(name) > 48 {
		return false
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '_' || r == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// sourceTypes are the source types a profile may include.
var sourceTypes = []string{document.SourceFile, document.SourceObject, document.SourceURL, document.SourceManual, document.SourceConversation}

// Check validates the profile: its name, mode, top-k, source types, filter
// and the syntax of its specs. A model is opened on first use, so a missing
// key fails the first answer, not Open.
func (p Profile) Check() error {
	if !profileNameOK(p.Name) {
		return fmt.Errorf("profile name %q must be 1-48 lowercase letters, digits, '_' or '-', starting with a letter or digit", p.Name)
	}
	if _, err := retrieve.ResolveMode(p.Mode, "", embed.ModelInfo{}, false); err != nil {
		return fmt.Errorf("profile %q: %w", p.Name, err)
	}
	if p.TopK < 0 || p.TopK > MaxTopK {
		return fmt.Errorf("profile %q: top_k must be 1 to %d, got %d", p.Name, MaxTopK, p.TopK)
	}
	for _, t := range p.Sources {
		if !slices.Contains(sourceTypes, t) {
			return fmt.Errorf("profile %q: source type %q is not one of %s", p.Name, t, strings.Join(sourceTypes, ", "))
		}
	}
	if p.Filter != nil {
		if err := filter.Check(p.Filter); err != nil {
			return fmt.Errorf("profile %q: %w", p.Name, err)
		}
	}
	for _, name := range p.Collections {
		if name == "" {
			return fmt.Errorf("profile %q: an empty collection name", p.Name)
		}
	}
	return nil
}

// view is everything the profile retrieves from: its filter and its source
// types; nil for all.
func (p *Profile) view() filter.Expr {
	var types filter.Expr
	if len(p.Sources) > 0 {
		vals := make([]any, len(p.Sources))
		for i, t := range p.Sources {
			vals[i] = t
		}
		types = filter.In("sourceType", vals...)
	}
	return filter.Merge(p.Filter, types)
}

// reaches reports whether the profile searches collection.
func (p *Profile) reaches(collection string) bool {
	if len(p.Collections) == 0 {
		return true
	}
	return slices.Contains(p.Collections, collection)
}

// profilesFrom turns config.toml's profiles into checked Profiles, with
// the filters parsed.
func profilesFrom(cfg map[string]config.Profile) (map[string]*Profile, error) {
	out := make(map[string]*Profile, len(cfg))
	for name, c := range cfg {
		p := &Profile{Name: name, Description: c.Description, Collections: c.Collections, Sources: c.Sources,
			Mode: c.Mode, TopK: c.TopK, Model: c.LLM, Post: c.Post}
		if strings.TrimSpace(c.Filter) != "" {
			f, err := filter.Parse(c.Filter)
			if err != nil {
				return nil, fmt.Errorf("profiles.%s.filter: %w", name, err)
			}
			p.Filter = f
		}
		if err := p.Check(); err != nil {
			return nil, err
		}
		out[name] = p
	}
	return out, nil
}

// Profiles lists the profiles the scope may use, by name; a scope limited
// to profiles sees only its own.
func (kb *KB) Profiles(sc Scope) []Profile {
	out := []Profile{}
	for _, p := range kb.profiles {
		if len(sc.Profiles) == 0 || slices.Contains(sc.Profiles, p.Name) {
			out = append(out, *p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ProfileInfo is a profile as every surface shows it: its filter in
// canonical JSON beside the rest.
type ProfileInfo struct {
	Profile
	Filter string `json:"filter,omitempty" doc:"The profile's view, in canonical JSON" jsonschema:"the profile's view, in canonical JSON"`
}

// Info is the profile as surfaces show it.
func (p Profile) Info() ProfileInfo { return ProfileInfo{Profile: p, Filter: p.FilterText()} }

// FilterText is the profile's filter in canonical JSON; "" for none.
func (p Profile) FilterText() string {
	if p.Filter == nil {
		return ""
	}
	s, err := filter.Format(p.Filter)
	if err != nil {
		return "(unprintable filter)"
	}
	return s
}

// ErrNoProfile is returned for a profile the knowledge base does not have.
var ErrNoProfile = errors.New("no such profile")

// through resolves the profile a request names (or the scope's only one)
// and narrows the scope by it: the profile's collections and view. It
// returns nil for a request through no profile, which a scope limited to
// profiles may not make.
func (kb *KB) through(sc Scope, name string) (Scope, *Profile, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		switch len(sc.Profiles) {
		case 0:
			return sc, nil, nil
		case 1:
			name = sc.Profiles[0]
		default:
			return sc, nil, invalid(fmt.Errorf("this caller searches through a profile: name one of %s", strings.Join(sc.Profiles, ", ")))
		}
	}
	if strings.HasPrefix(name, "\x00") { // limits that shared nothing (KeyScope)
		return sc, nil, fmt.Errorf("%w: no profile is open to this caller", ErrForbidden)
	}
	if len(sc.Profiles) > 0 && !slices.Contains(sc.Profiles, name) {
		return sc, nil, fmt.Errorf("%w: profile %q is not open to this caller (open: %s)", ErrForbidden, name, strings.Join(sc.Profiles, ", "))
	}
	p, ok := kb.profiles[name]
	if !ok {
		names := make([]string, 0, len(kb.profiles))
		for _, q := range kb.Profiles(sc) {
			names = append(names, q.Name)
		}
		return sc, nil, invalid(fmt.Errorf("%w %q (profiles: %s)", ErrNoProfile, name, cmp.Or(strings.Join(names, ", "), "none; define them as [profiles.NAME] in config.toml")))
	}
	out := sc
	out.Profiles = nil // the profile is chosen: what it leaves is the narrowed scope
	out.Filter = filter.Merge(sc.Filter, p.view())
	if len(p.Collections) > 0 {
		switch {
		case len(sc.Collections) == 0:
			out.Collections = slices.Clone(p.Collections)
		default:
			out.Collections = nil
			for _, c := range p.Collections {
				if slices.Contains(sc.Collections, c) {
					out.Collections = append(out.Collections, c)
				}
			}
			if len(out.Collections) == 0 {
				return sc, nil, fmt.Errorf("%w: profile %q searches %s, none of them open to this caller", ErrForbidden, name, strings.Join(p.Collections, ", "))
			}
		}
	}
	return out, p, nil
}

// post is the profile's post-processors; none for no profile.
func (p *Profile) post() []string {
	if p == nil {
		return nil
	}
	return p.Post
}

// collectionFor is the collection a request through p searches when it
// names none.
func (kb *KB) collectionFor(p *Profile, name string) string {
	if name == "" && p != nil && len(p.Collections) > 0 {
		return p.Collections[0]
	}
	return name
}

// modeFor is the configured mode a request through p resolves against.
func (kb *KB) modeFor(p *Profile) string {
	if p != nil && p.Mode != "" {
		return p.Mode
	}
	return kb.cfg.Search.Mode
}

// topKFor is the top-k of a request through p that names k.
func (kb *KB) topKFor(p *Profile, k int) (int, error) {
	if k == 0 && p != nil && p.TopK > 0 {
		k = p.TopK
	}
	return kb.topK(k)
}

// chatFor is the chat model of an answer through p: the profile's, opened
// once per spec, else the knowledge base's. A model an option chose
// (--model) stands for the profile's.
func (kb *KB) chatFor(p *Profile) (llm.ChatModel, error) {
	if p == nil || strings.TrimSpace(p.Model) == "" || kb.chatGiven {
		return kb.ChatModel()
	}
	kb.profileMu.Lock()
	defer kb.profileMu.Unlock()
	if m, ok := kb.profileChat[p.Model]; ok {
		return m, nil
	}
	m, err := llmspec.Open(p.Model)
	if err != nil {
		return nil, invalid(fmt.Errorf("profile %q: llm: %w", p.Name, err))
	}
	if kb.profileChat == nil {
		kb.profileChat = map[string]llm.ChatModel{}
	}
	kb.profileChat[p.Model] = m
	return m, nil
}

// viewOf is what a scope limited to profiles reaches in one collection:
// the union of the views of its profiles that search it; ok is false when
// none does.
func (kb *KB) viewOf(sc Scope, collection string) (f filter.Expr, ok bool) {
	var views []filter.Expr
	for _, name := range sc.Profiles {
		p, found := kb.profiles[name]
		if !found || !p.reaches(collection) {
			continue
		}
		v := p.view()
		if v == nil {
			return sc.Filter, true
		}
		views = append(views, v)
	}
	switch len(views) {
	case 0:
		return nil, false
	case 1:
		return filter.Merge(sc.Filter, views[0]), true
	}
	return filter.Merge(sc.Filter, filter.Or(views...)), true
}

// profilesPost reports whether a profile has post-processors to check.
func (kb *KB) profilesPost() bool {
	for _, p := range kb.profiles {
		if len(p.Post) > 0 {
			return true
		}
	}
	return false
}

// checkProfiles checks the knowledge base's own profiles' post-processor
// specs the way answers build them, so a typo fails at Open.
func (kb *KB) checkProfiles(env spec.Env) error {
	for _, p := range kb.profiles {
		if _, err := spec.Post(p.Post, env); err != nil {
			return invalid(fmt.Errorf("profile %q: %w", p.Name, err))
		}
	}
	return nil
}
