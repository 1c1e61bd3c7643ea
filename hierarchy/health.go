package hierarchy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// TinyChunk is the length, in characters after trimming, below which a
// chunk is tiny (SEMANTICS §3 and §6). The audit counts every tiny chunk:
// those without a letter or digit as serious (Fix deletes them), the
// others as a warning, because a short section such as "Use 8080." or a
// small file is something a person wrote, which the splitters keep and a
// repair must not drop, and which every real corpus holds.
const TinyChunk = 20

// Markup thresholds: a chunk of at least MarkupMinChars non-space
// characters of which fewer than MarkupLetterShare are letters is mostly
// markup, numbers or path data (an SVG read as text, a minified file).
const (
	MarkupMinChars    = 80
	MarkupLetterShare = 0.45
)

// Severities of a finding.
const (
	Serious = "serious"
	Warning = "warning"
)

// Checks the audit runs.
const (
	CheckBrokenParent    = "broken_parent"
	CheckTinyChunks      = "tiny_or_empty_chunks" // without a letter or digit: serious
	CheckShortChunks     = "short_chunks"         // under TinyChunk, with words: a warning
	CheckMarkup          = "markup_chunks"
	CheckDuplicateNames  = "duplicate_node_names"
	CheckEmbeddingModel  = "embedding_model"
	CheckOrphanNodes     = "orphan_nodes"
	CheckNoSource        = "chunks_without_source"
	CheckNoTriggers      = "nodes_without_triggers"
	CheckMissingSources  = "sources_missing_on_disk"
	CheckStaleIndex      = "stale_index_checkpoint"
	CheckUnattached      = "unattached_chunks"
	CheckDanglingAttachs = "attachments_without_chunk"
)

// maxItems bounds the examples a finding lists.
const maxItems = 20

// Finding is one failed check.
type Finding struct {
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Count    int    `json:"count"`
	// Items names up to 20 of the nodes, chunks or sources at fault.
	Items []string `json:"items"`
	// Fixable says whether Fix repairs it; Advice says how, or what to do
	// by hand.
	Fixable bool   `json:"fixable"`
	Advice  string `json:"advice"`

	ids []string // chunk ids, for fixes
}

// Report is the result of an audit.
type Report struct {
	Collection string `json:"collection"`
	// OK is false when any finding is serious.
	OK       bool      `json:"ok"`
	Serious  int       `json:"serious"`
	Warnings int       `json:"warnings"`
	Nodes    int       `json:"nodes"`
	Chunks   int       `json:"chunks"`
	Links    int       `json:"links"`
	Findings []Finding `json:"findings"`
}

// Finding returns the report's finding for a check, or nil.
func (r *Report) Finding(check string) *Finding {
	for i := range r.Findings {
		if r.Findings[i].Check == check {
			return &r.Findings[i]
		}
	}
	return nil
}

func (r *Report) add(f Finding) {
	if f.Count == 0 {
		return
	}
	if len(f.Items) > maxItems {
		f.Items = f.Items[:maxItems]
	}
	if f.Severity == Serious {
		r.Serious += f.Count
	} else {
		r.Warnings += f.Count
	}
	r.Findings = append(r.Findings, f)
}

// AuditOptions tune an audit.
type AuditOptions struct {
	// Model is the configured embedder's model; a collection built with
	// another is a serious finding. The zero value skips the comparison.
	Model embed.ModelInfo
}

// Audit checks the hierarchy and its collection. Serious: nodes whose
// parent is missing, empty or tiny chunks, duplicate node names, and
// chunks or a collection whose embedding model is not the configured one.
// Warnings: orphan nodes (no chunks, no children), chunks without a
// source, nodes without triggers, file sources missing on disk, stale
// index checkpoints, chunks under no node and attachments of deleted
// chunks.
func (h *Hierarchy) Audit(ctx context.Context, opt AuditOptions) (*Report, error) {
	st, err := h.load(ctx, true)
	if err != nil {
		return nil, err
	}
	links, err := h.hs.Links(ctx, h.coll.Name())
	if err != nil {
		return nil, err
	}
	rep := &Report{Collection: h.coll.Name(), Nodes: len(st.nodes), Links: len(links)}

	// Nodes.
	broken := Finding{Check: CheckBrokenParent, Severity: Serious,
		Advice: "re-parent or remove these nodes by hand (knowledge_rename_node cannot move a node; remove it and add it again)"}
	orphans := Finding{Check: CheckOrphanNodes, Severity: Warning, Advice: "remove them, or attach chunks to them"}
	noTrig := Finding{Check: CheckNoTriggers, Severity: Warning, Advice: "give them chunks with headings or code symbols, or triggers by hand"}
	names := map[string][]string{}
	for _, n := range st.nodes {
		if n.Kind == store.NodeRoot {
			continue
		}
		if st.byID[n.ParentID] == nil || n.ParentID == n.ID {
			broken.Count++
			broken.Items = append(broken.Items, fmt.Sprintf("%s (node %d, parent %d)", n.Path, n.ID, n.ParentID))
		}
		if st.counts[n.ID] == 0 && len(st.kids[n.ID]) == 0 {
			orphans.Count++
			orphans.Items = append(orphans.Items, n.Path)
		}
		if len(n.Triggers) == 0 {
			noTrig.Count++
			noTrig.Items = append(noTrig.Items, n.Path)
		}
		names[n.Name] = append(names[n.Name], n.Path)
	}
	dups := Finding{Check: CheckDuplicateNames, Severity: Serious, Advice: "rename all but one of each (quarry links and triggers name nodes by name)"}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		if ps := names[name]; len(ps) > 1 {
			dups.Count++
			dups.Items = append(dups.Items, fmt.Sprintf("%q: %s", name, strings.Join(ps, ", ")))
		}
	}

	// Chunks.
	cfg := h.coll.Config()
	tiny := Finding{Check: CheckTinyChunks, Severity: Serious, Fixable: true,
		Advice: "--fix deletes them: a chunk without a letter or digit answers nothing"}
	// Short text with words is something a person wrote — a small file, a
	// short section or object — and every real corpus has some: a
	// warning to know of, not a fault to fix.
	short := Finding{Check: CheckShortChunks, Severity: Warning,
		Advice: "kept (a person wrote them): give such a section more text, or join it to a neighbour, in the source"}
	markup := Finding{Check: CheckMarkup, Severity: Warning, Advice: "mostly markup, numbers or path data: leave such files out (--exclude) or check how their format is read"}
	noSrc := Finding{Check: CheckNoSource, Severity: Warning, Advice: "re-add them with a source name so answers can cite them"}
	model := Finding{Check: CheckEmbeddingModel, Severity: Serious}
	unattached := Finding{Check: CheckUnattached, Severity: Warning, Fixable: true, Advice: "--fix hangs them under their folder's node"}
	if opt.Model != (embed.ModelInfo{}) && opt.Model != cfg.Model {
		model.Count++
		model.Items = append(model.Items, fmt.Sprintf("collection %q was built with %s; the configured embedder is %s", cfg.Name, cfg.Model, opt.Model))
		model.Advice = "set the embedder back, or re-ingest into a new collection"
	}
	stored := map[string]bool{}
	err = h.coll.Scan(ctx, 1000, func(docs []*document.Document) error {
		for _, d := range docs {
			rep.Chunks++
			stored[d.ID] = true
			if text := strings.TrimSpace(d.Content); utf8.RuneCountInString(text) < TinyChunk {
				f := &short
				if !hasWord(text) {
					f = &tiny
					tiny.ids = append(tiny.ids, d.ID)
				}
				f.Count++
				f.Items = append(f.Items, fmt.Sprintf("%s (%s: %q)", d.ID, d.SourceName, text))
			}
			if mostlyMarkup(d.Content) {
				markup.Count++
				markup.Items = append(markup.Items, fmt.Sprintf("%s (%s: %q)", d.ID, d.SourceName, clip(d.Content, 60)))
			}
			if strings.TrimSpace(d.SourceName) == "" || strings.TrimSpace(d.SourceType) == "" {
				noSrc.Count++
				noSrc.Items = append(noSrc.Items, d.ID)
			}
			if len(d.Embedding) != cfg.Model.Dimension {
				model.Count++
				model.Items = append(model.Items, fmt.Sprintf("chunk %s has %d dimensions, the collection's model %d", d.ID, len(d.Embedding), cfg.Model.Dimension))
				model.Advice = "re-ingest the sources of these chunks"
			}
			if _, ok := st.byDoc[d.ID]; !ok {
				unattached.Count++
				unattached.Items = append(unattached.Items, d.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit %q: %w", h.coll.Name(), err)
	}
	dangling := Finding{Check: CheckDanglingAttachs, Severity: Warning, Fixable: true, Advice: "--fix removes them"}
	missing := Finding{Check: CheckMissingSources, Severity: Warning,
		Advice: "run quarry ingest on their folder with --prune to drop their chunks, or restore the files"}
	checked := map[string]bool{}
	for _, a := range st.atts {
		if !stored[a.DocID] {
			dangling.Count++
			dangling.Items = append(dangling.Items, a.DocID)
		}
		if a.File == "" || checked[a.File] {
			continue
		}
		checked[a.File] = true
		if _, err := os.Stat(a.File); errors.Is(err, os.ErrNotExist) {
			missing.Count++
			missing.Items = append(missing.Items, fmt.Sprintf("%s (%s)", a.Source.Name, a.File))
		}
	}

	// Index checkpoints.
	stale := Finding{Check: CheckStaleIndex, Severity: Warning, Fixable: true, Advice: "--fix rebuilds the indexes from the rows"}
	if im, ok := h.coll.Store().IndexMaintainer(); ok {
		states, err := im.IndexStates(ctx)
		if err != nil {
			return nil, fmt.Errorf("audit %q: %w", h.coll.Name(), err)
		}
		for _, s := range states {
			if s.Collection == cfg.Name && s.Stale {
				stale.Count++
				stale.Items = append(stale.Items, fmt.Sprintf("%s: %s", s.Collection, s.Reason))
			}
		}
	}
	for _, f := range []Finding{broken, tiny, dups, model, orphans, noSrc, noTrig, missing, stale, unattached, dangling, markup, short} {
		rep.add(f)
	}
	rep.OK = rep.Serious == 0
	return rep, nil
}

// Fix applies the safe repairs of a report: it deletes tiny chunks that
// hold no letter or digit (short text stays),
// rebuilds stale indexes, hangs unattached chunks under their nodes and
// drops attachments of deleted chunks, then rebuilds the links. It returns
// one line per action. Broken parents, duplicate names, orphans, missing
// files and model mismatches need a person.
func (h *Hierarchy) Fix(ctx context.Context, rep *Report) ([]string, error) {
	var done []string
	if f := rep.Finding(CheckTinyChunks); f != nil && len(f.ids) > 0 {
		n, err := h.dropChunks(ctx, f.ids)
		if err != nil {
			return done, err
		}
		done = append(done, fmt.Sprintf("deleted %d empty chunks (no letter or digit)", n))
		if kept := f.Count - len(f.ids); kept > 0 {
			done = append(done, fmt.Sprintf("kept %d short chunks that hold text", kept))
		}
		// Checkpoint the write, or the deletion itself leaves the
		// checkpoint behind the rows.
		if err := h.coll.Store().Checkpoint(ctx); err != nil {
			return done, fmt.Errorf("checkpoint after deleting tiny chunks: %w", err)
		}
	}
	if f := rep.Finding(CheckStaleIndex); f != nil {
		if im, ok := h.coll.Store().IndexMaintainer(); ok {
			if err := im.RebuildIndexes(ctx, h.coll.Name()); err != nil {
				return done, fmt.Errorf("rebuild indexes: %w", err)
			}
			done = append(done, fmt.Sprintf("rebuilt the indexes of %q from its rows", h.coll.Name()))
		}
	}
	if rep.Finding(CheckUnattached) != nil || rep.Finding(CheckDanglingAttachs) != nil || rep.Finding(CheckTinyChunks) != nil {
		br, err := h.Build(ctx, nil)
		if err != nil {
			return done, err
		}
		done = append(done, fmt.Sprintf("attached %d chunks and dropped %d stale attachments", br.Attached, br.Detached))
	}
	lr, err := h.RebuildLinks(ctx)
	if err != nil {
		return done, err
	}
	done = append(done, fmt.Sprintf("rebuilt links: %d tag overlap, %d shared source", lr.TagOverlap, lr.CrossRef))
	return done, nil
}

// dropChunks deletes chunks by id. A tracked source is rewritten without
// them in one transaction (keeping its hash, so an unchanged file is not
// re-ingested); other chunks are deleted with their source and the rest
// of it written back.
func (h *Hierarchy) dropChunks(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	drop := map[string]bool{}
	for _, id := range ids {
		drop[id] = true
	}
	docs, err := h.coll.Get(ctx, ids)
	if err != nil {
		return 0, err
	}
	sources := map[document.Source]bool{}
	for _, d := range docs {
		sources[document.Source{Type: d.SourceType, Name: d.SourceName}] = true
	}
	hashes := map[document.Source]string{}
	if states, err := h.coll.Sources(ctx); err == nil {
		for _, s := range states {
			hashes[s.Source] = s.Hash
		}
	}
	// One pass gathers what each affected source keeps.
	keep := map[document.Source][]*document.Document{}
	dropped := 0
	err = h.coll.Scan(ctx, 1000, func(page []*document.Document) error {
		for _, d := range page {
			src := document.Source{Type: d.SourceType, Name: d.SourceName}
			switch {
			case !sources[src]:
			case drop[d.ID]:
				dropped++
			default:
				keep[src] = append(keep[src], d)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var updates []store.SourceUpdate
	for src := range sources {
		if hash, ok := hashes[src]; ok {
			updates = append(updates, store.SourceUpdate{Source: src, Hash: hash, Docs: keep[src]})
			continue
		}
		f := filter.And(filter.Eq("sourceType", src.Type), filter.Eq("sourceName", src.Name))
		if _, err := h.coll.Delete(ctx, f); err != nil {
			return 0, fmt.Errorf("drop tiny chunks of %s: %w", src.Name, err)
		}
		if len(keep[src]) > 0 {
			if err := h.coll.Upsert(ctx, keep[src]); err != nil {
				return 0, fmt.Errorf("drop tiny chunks of %s: %w", src.Name, err)
			}
		}
	}
	if err := h.coll.ReplaceSources(ctx, updates); err != nil {
		return 0, fmt.Errorf("drop tiny chunks: %w", err)
	}
	return dropped, nil
}

// hasWord reports whether text holds a letter or a digit.
func hasWord(text string) bool {
	return strings.IndexFunc(text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// mostlyMarkup is the cheap ratio the audit uses: letters among the
// non-space characters of a chunk long enough to judge.
func mostlyMarkup(text string) bool {
	letters, all := 0, 0
	for _, r := range text {
		if unicode.IsSpace(r) {
			continue
		}
		all++
		if unicode.IsLetter(r) {
			letters++
		}
	}
	return all >= MarkupMinChars && float64(letters) < MarkupLetterShare*float64(all)
}

// clip shortens text to n runes, on one line.
func clip(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return string(r[:n]) + "…"
	}
	return text
}
