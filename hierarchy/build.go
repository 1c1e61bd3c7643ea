package hierarchy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/store"
)

// skipFolders are folders that make no node (SEMANTICS §6), besides
// dot-folders; their files hang under the nearest folder above them.
var skipFolders = []string{"node_modules", "__pycache__", "venv", "build", "dist", "vendor"}

// SkipFolder reports whether a folder of this name makes no node.
func SkipFolder(name string) bool {
	return strings.HasPrefix(name, ".") || slices.Contains(skipFolders, name)
}

// folderOf returns the folder a file source's chunks hang under: the
// source name's directory cut before its first skipped folder; "" for the
// root.
func folderOf(sourceName string) string {
	dir := path.Dir(sourceName)
	if dir == "." || dir == "/" {
		return ""
	}
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	for i, p := range parts {
		if p == "" || p == ".." || SkipFolder(p) {
			parts = parts[:i]
			break
		}
	}
	return strings.Join(parts, "/")
}

// chunkKeywords are a chunk's trigger candidates: the keywords of its
// heading path and of the symbols its text defines.
func chunkKeywords(d *document.Document) []string {
	texts := make([]string, 0, len(d.Provenance.HeadingPath))
	for _, h := range d.Provenance.HeadingPath {
		texts = append(texts, symbolName(h))
	}
	texts = append(texts, Symbols(d.Content)...)
	return Keywords(texts, 0)
}

// symbolName is a heading without the Go keyword of a code chunk's symbol
// path ("package http", "var ErrBodyNotAllowed …", "const (…"): every Go
// chunk's path has one, so it would top every node's triggers. Other
// headings ("Package management") are kept whole.
func symbolName(h string) string {
	for _, kw := range []string{"package ", "var ", "const "} {
		rest, ok := strings.CutPrefix(h, kw)
		rest = strings.TrimSuffix(rest, " …")
		if ok && rest != "" && strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) < 0 {
			return rest
		}
	}
	return h
}

// rankTriggers orders keywords by how many chunks give them, then by first
// appearance, and keeps MaxTriggers.
func rankTriggers(perChunk [][]string) []string {
	count := map[string]int{}
	first := map[string]int{}
	var all []string
	for _, kws := range perChunk {
		for _, k := range kws {
			if _, ok := count[k]; !ok {
				first[k] = len(all)
				all = append(all, k)
			}
			count[k]++
		}
	}
	slices.SortStableFunc(all, func(a, b string) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(first[a], first[b])) })
	if len(all) > MaxTriggers {
		all = all[:MaxTriggers]
	}
	return all
}

// BuildReport counts what Build changed.
type BuildReport struct {
	Nodes    int `json:"nodes"`    // nodes after the build
	Created  int `json:"created"`  // nodes created
	Attached int `json:"attached"` // chunks attached or moved
	Detached int `json:"detached"` // attachments of chunks no longer stored
}

// Build brings the hierarchy up to the collection (after an ingestion):
// every folder holding file sources gets a node (created once and kept,
// so a renamed node stays renamed), each chunk of a file source (and of a
// JSON file's objects, when files names the file) hangs under its
// folder's node and other chunks under the root unless attached
// by hand, attachments of deleted chunks go, and each node's triggers are
// recomputed from its chunks (nodes made by hand keep theirs first). files
// maps file source names to their paths on disk, for the audit; sources it
// does not name keep the path they had.
func (h *Hierarchy) Build(ctx context.Context, files map[string]string) (BuildReport, error) {
	return h.retry(ctx, files, nil)
}

// Changes are what one ingestion changed: the sources it wrote, emptied
// or deleted, and the ids of the chunks it wrote.
type Changes struct {
	Sources []document.Source
	Chunks  []string
}

// Update is Build for what one ingestion changed, reading only those
// chunks and the chunks of the nodes they join or leave: a few files
// added to a large knowledge base cost what they wrote, not the whole
// collection. The result is the one Build gives (TestUpdateIsBuild). A
// hierarchy that does not exist yet is built whole.
func (h *Hierarchy) Update(ctx context.Context, files map[string]string, ch Changes) (BuildReport, error) {
	return h.retry(ctx, files, &ch)
}

func (h *Hierarchy) retry(ctx context.Context, files map[string]string, ch *Changes) (BuildReport, error) {
	rep, err := h.build(ctx, files, ch)
	// Another build made a node first: start again from the rows it wrote.
	// Each retry sees more of its nodes, so a few suffice.
	for try := 0; try < 4 && errors.Is(err, store.ErrFolderTaken); try++ {
		rep, err = h.build(ctx, files, ch)
	}
	return rep, err
}

// chunk is one stored chunk as the build places it.
type chunk struct {
	id     string
	src    document.Source
	folder string
	kws    []string
	// foldered chunks hang under their folder's node: those of file
	// sources, and the objects of a JSON file this build was given.
	foldered bool
}

func (h *Hierarchy) chunkOf(d *document.Document, files map[string]string) chunk {
	c := chunk{id: d.ID, src: document.Source{Type: d.SourceType, Name: d.SourceName}, kws: chunkKeywords(d)}
	c.foldered = d.SourceType == document.SourceFile || (d.SourceType == document.SourceObject && files[d.SourceName] != "")
	if c.foldered {
		c.folder = folderOf(d.SourceName)
	}
	return c
}

// getPage is how many chunks an update reads at once.
const getPage = 1000

// chunks reads the chunks of ids, in id order.
func (h *Hierarchy) chunks(ctx context.Context, ids []string, files map[string]string) ([]chunk, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]chunk, 0, len(ids))
	for start := 0; start < len(ids); start += getPage {
		docs, err := h.coll.Get(ctx, ids[start:min(start+getPage, len(ids))])
		if err != nil {
			return nil, fmt.Errorf("read chunks of %q: %w", h.coll.Name(), err)
		}
		for _, d := range docs {
			out = append(out, h.chunkOf(d, files))
		}
	}
	slices.SortFunc(out, func(a, b chunk) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

func (h *Hierarchy) build(ctx context.Context, files map[string]string, ch *Changes) (BuildReport, error) {
	var rep BuildReport
	st, err := h.load(ctx, true)
	if err != nil {
		return rep, err
	}
	hadRoot := st.root() != nil
	if !hadRoot {
		ch = nil // a first build reads everything
	}
	root, err := h.ensureRoot(ctx, st)
	if err != nil {
		return rep, err
	}
	if !hadRoot {
		rep.Created++
	}
	rootID := root.ID
	byFolder := map[string]int64{"": rootID}
	for _, n := range st.nodes {
		if n.Folder != "" {
			byFolder[n.Folder] = n.ID
		}
	}
	var chunks []chunk
	if ch == nil {
		err = h.coll.Scan(ctx, 1000, func(docs []*document.Document) error {
			for _, d := range docs {
				chunks = append(chunks, h.chunkOf(d, files))
			}
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("build the hierarchy of %q: %w", h.coll.Name(), err)
		}
	} else if chunks, err = h.chunks(ctx, ch.Chunks, files); err != nil {
		return rep, err
	}
	folders := map[string]bool{}
	for _, c := range chunks {
		if c.foldered {
			folders[c.folder] = true
		}
	}

	// Nodes for new folders: one write per level, parents first, names
	// given in path order so homonyms are qualified the same way each time.
	missing := map[string]bool{}
	for f := range folders {
		for ; f != ""; f = path.Dir(f) {
			if _, ok := byFolder[f]; !ok {
				missing[f] = true
			}
			if !strings.Contains(f, "/") {
				break
			}
		}
	}
	levels := map[int][]string{}
	for f := range missing {
		d := strings.Count(f, "/")
		levels[d] = append(levels[d], f)
	}
	for d := 0; len(missing) > 0; d++ {
		fs := levels[d]
		slices.Sort(fs)
		batch := make([]store.Node, 0, len(fs))
		pending := map[string]bool{}
		for _, f := range fs {
			parentFolder := ""
			if i := strings.LastIndex(f, "/"); i >= 0 {
				parentFolder = f[:i]
			}
			p := st.byID[byFolder[parentFolder]]
			name := st.childName(p, path.Base(f), pending)
			pending[name] = true
			batch = append(batch, store.Node{ParentID: p.ID, Kind: kindAt(d + 1), Name: name, Path: p.Path + "/" + name, Folder: f, Triggers: []string{}})
			delete(missing, f)
		}
		if len(batch) == 0 {
			continue
		}
		got, err := h.hs.PutNodes(ctx, h.coll.Name(), batch)
		if err != nil {
			return rep, fmt.Errorf("create the nodes of %d folders: %w", len(batch), err)
		}
		for _, n := range got {
			st.add(n)
			byFolder[n.Folder] = n.ID
		}
		rep.Created += len(got)
	}

	// Attachments.
	var atts []store.Attachment
	stored := make(map[string]bool, len(chunks))
	perNode := map[int64][]chunk{}
	// affected are the nodes whose chunks change: every node in a whole
	// build, those chunks join or leave in an update.
	affected := map[int64]bool{}
	for _, c := range chunks {
		stored[c.id] = true
		target := byFolder[c.folder]
		file := ""
		if c.foldered {
			file = files[c.src.Name]
		}
		if i, ok := st.byDoc[c.id]; ok {
			old := st.atts[i]
			if file == "" {
				file = old.File
			}
			// A chunk placed by hand under a node of its own stays there.
			if n := st.byID[old.NodeID]; n != nil && (n.Folder == "" && n.Kind != store.NodeRoot || !c.foldered) {
				target = old.NodeID
			}
			affected[old.NodeID] = true
			if old.NodeID == target && old.File == file && old.Source == c.src {
				perNode[target] = append(perNode[target], c)
				continue
			}
		}
		affected[target] = true
		atts = append(atts, store.Attachment{DocID: c.id, NodeID: target, Source: c.src, File: file})
		perNode[target] = append(perNode[target], c)
	}
	var detach []string
	if ch == nil {
		for _, a := range st.atts {
			if !stored[a.DocID] {
				detach = append(detach, a.DocID)
			}
		}
	} else {
		// The chunks the changed sources no longer have.
		changed := make(map[document.Source]bool, len(ch.Sources))
		for _, s := range ch.Sources {
			changed[s] = true
		}
		for _, a := range st.atts {
			if changed[a.Source] && !stored[a.DocID] {
				detach = append(detach, a.DocID)
				affected[a.NodeID] = true
			}
		}
		// The other chunks of the affected nodes give their triggers too.
		gone := make(map[string]bool, len(detach))
		for _, id := range detach {
			gone[id] = true
		}
		var others []string // (chunks attached anew are among stored)
		for _, a := range st.atts {
			if affected[a.NodeID] && !gone[a.DocID] && !stored[a.DocID] {
				others = append(others, a.DocID)
			}
		}
		rest, err := h.chunks(ctx, others, files)
		if err != nil {
			return rep, err
		}
		for _, c := range rest {
			n := st.atts[st.byDoc[c.id]].NodeID
			perNode[n] = append(perNode[n], c)
		}
		for n, cs := range perNode {
			slices.SortFunc(cs, func(a, b chunk) int { return cmp.Compare(a.id, b.id) })
			perNode[n] = cs
		}
	}
	if len(atts)+len(detach) > 0 {
		if err := h.hs.Attach(ctx, h.coll.Name(), atts, detach); err != nil {
			return rep, fmt.Errorf("attach chunks: %w", err)
		}
	}
	rep.Attached, rep.Detached = len(atts), len(detach)

	// Triggers.
	var changed []store.Node
	for _, n := range st.nodes {
		if ch != nil && !affected[n.ID] {
			continue
		}
		perChunk := make([][]string, len(perNode[n.ID]))
		for i, c := range perNode[n.ID] {
			perChunk[i] = c.kws
		}
		trig := rankTriggers(perChunk)
		if n.Folder == "" && n.Kind != store.NodeRoot {
			trig = MergeTriggers(n.Triggers, trig)
		}
		if trig == nil {
			trig = []string{}
		}
		if !slices.Equal(trig, n.Triggers) {
			n.Triggers = trig
			changed = append(changed, n)
		}
	}
	if len(changed) > 0 {
		if _, err := h.hs.PutNodes(ctx, h.coll.Name(), changed); err != nil {
			return rep, fmt.Errorf("update triggers: %w", err)
		}
	}
	rep.Nodes = len(st.nodes)
	return rep, nil
}
