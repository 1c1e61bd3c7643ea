package quarry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/store"
)

// MaxImportBytes bounds an import file.
const MaxImportBytes = 32 << 20

// ImportFile is the YAML that Import reads: a knowledge hierarchy and its
// chunks, as NeuRAG's vaults were written.
//
//	collection: handbook          # optional: the default collection
//	nodes:
//	  - name: Billing
//	    type: fundamental         # optional: fundamental (under the root) or specialization (deeper)
//	    triggers: [invoice, refund]
//	    tags: [finance]           # added to every chunk's metadata as "tags"
//	    chunks:
//	      - text: Refunds are paid within fourteen days.
//	        source: billing/refunds   # optional: import:/Root/Billing
//	        metadata: {team: billing}
//	  - name: Gift cards
//	    parent: Billing           # a path (/Root/Billing) or a unique name; optional: the root
//	    chunks:
//	      - text: Gift cards cannot be refunded.
//
// Nodes come in order, a parent before its children.
type ImportFile struct {
	Collection string       `yaml:"collection" json:"collection,omitempty"`
	Nodes      []ImportNode `yaml:"nodes" json:"nodes"`
}

// ImportNode is one node of an ImportFile.
type ImportNode struct {
	Name     string        `yaml:"name" json:"name"`
	Type     string        `yaml:"type" json:"type,omitempty"`
	Parent   string        `yaml:"parent" json:"parent,omitempty"`
	Triggers []string      `yaml:"triggers" json:"triggers,omitempty"`
	Tags     []string      `yaml:"tags" json:"tags,omitempty"`
	Chunks   []ImportChunk `yaml:"chunks" json:"chunks,omitempty"`
}

// ImportChunk is one chunk of an ImportNode.
type ImportChunk struct {
	// ID names the chunk; by default it is derived from its source, place
	// and text, so importing the file again replaces it.
	ID       string         `yaml:"id" json:"id,omitempty"`
	Text     string         `yaml:"text" json:"text"`
	Source   string         `yaml:"source" json:"source,omitempty"`
	Metadata map[string]any `yaml:"metadata" json:"metadata,omitempty"`
}

// ImportReport is what Import did.
type ImportReport struct {
	Collection string `json:"collection"`
	// Nodes were made or found (an import run again finds them all);
	// Created counts the new ones. Chunks were placed; Written counts
	// those embedded and stored by this run, the others were stored
	// already as the file gives them (an import run again, or resumed
	// after it was cut off, embeds only what is missing).
	Nodes   int `json:"nodes"`
	Created int `json:"created"`
	Chunks  int `json:"chunks"`
	Written int `json:"written"`
}

// ParseImport reads an import file: YAML, or JSON (YAML's subset, read by
// encoding/json when the file starts with '{', for files a program
// writes). Unknown keys are errors, so a typo is reported, not ignored.
func ParseImport(r io.Reader) (*ImportFile, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if len(b) > MaxImportBytes {
		return nil, invalid(fmt.Errorf("import: the file is over %d MiB", MaxImportBytes>>20))
	}
	var f ImportFile
	if t := bytes.TrimLeft(b, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, invalid(fmt.Errorf("import: JSON: %w", err))
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
			return nil, invalid(fmt.Errorf("import: %s", yamlError(err)))
		}
	}
	for i, n := range f.Nodes {
		if n.Name == "" {
			return nil, invalid(fmt.Errorf("import: node %d has no name", i+1))
		}
		if len(n.Triggers) > hierarchy.MaxTriggers {
			return nil, invalid(fmt.Errorf("import: node %q: at most %d triggers", n.Name, hierarchy.MaxTriggers))
		}
		for j, c := range n.Chunks {
			if c.Text == "" {
				return nil, invalid(fmt.Errorf("import: node %q, chunk %d has no text", n.Name, j+1))
			}
		}
	}
	return &f, nil
}

// yamlErrorsShown bounds the problems an import error lists: a file with
// a key misspelt on every node would otherwise give one line per node.
const yamlErrorsShown = 5

func yamlError(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) <= yamlErrorsShown {
		return err.Error()
	}
	return fmt.Sprintf("yaml: %s; and %d more", strings.Join(te.Errors[:yamlErrorsShown], "; "), len(te.Errors)-yamlErrorsShown)
}

// importBatch is how many chunks an import embeds and stores at a time.
const importBatch = 2048

// Import writes an import file's nodes and chunks into a collection (the
// file's, else collection, else the default), made when missing. It does
// what finding or making each node under its parent with its triggers
// merged in (hierarchy.EnsureNode) and placing its chunks under it would,
// in file order, but in batches: the chunks are embedded and stored 512 at
// a time, then the nodes and placements are written by hierarchy.Place
// and the links rebuilt once. Running it again changes nothing, and a run
// cut off (cancelled, or its process killed) is finished by running it
// again: chunks already stored as the file gives them are not embedded
// again. Importing changes the hierarchy, which spans every document, so
// the scope must reach them all and may write.
func (kb *KB) Import(ctx context.Context, sc Scope, collection string, f *ImportFile) (*ImportReport, error) {
	return kb.importFile(ctx, sc, collection, f, nil)
}

// importFile is Import, telling progress (when not nil) what is done
// after each batch.
func (kb *KB) importFile(ctx context.Context, sc Scope, collection string, f *ImportFile, progress func(ImportReport)) (*ImportReport, error) {
	c, err := kb.importCollection(ctx, sc, collection, f)
	if err != nil {
		return nil, err
	}
	return kb.runImport(ctx, c, f, progress)
}

// importCollection checks the caller may import and returns the
// collection the file goes to.
func (kb *KB) importCollection(ctx context.Context, sc Scope, collection string, f *ImportFile) (*store.Collection, error) {
	if sc.ReadOnly || !sc.MayReachAll() {
		return nil, fmt.Errorf("%w: importing nodes changes the knowledge hierarchy, which is not open to this caller (read-only, or limited by a filter)", ErrForbidden)
	}
	if f.Collection != "" {
		collection = f.Collection
	}
	return kb.collection(ctx, sc, collection, true)
}

// ImportJobKind is the kind of job StartImport records.
const ImportJobKind = "import"

// ErrImportRunning is returned by StartImport while another background
// import runs in this process: each holds its whole file in memory, so
// they run one at a time.
var ErrImportRunning = errors.New("another import is running; start this one when it ends")

// StartImport starts Import as a background job run by jobs and returns
// once the job is recorded: the caller's rights and the file's node
// references are checked first, so a refusal comes back at once; what
// goes wrong later is the job's error. The job counts the file's chunks
// (Total), those stored (Chunks) and, at the end, the nodes (Nodes). An
// import cut off is finished by starting it again (see Import). A store
// that keeps no jobs cannot run one.
func (kb *KB) StartImport(ctx context.Context, sc Scope, collection string, f *ImportFile, jobs *ingest.Jobs) (ingest.Started, error) {
	c, err := kb.importCollection(ctx, sc, collection, f)
	if err != nil {
		return ingest.Started{}, err
	}
	js, err := kb.store.Jobs()
	if err != nil {
		return ingest.Started{}, fmt.Errorf("%w: this store keeps no jobs, so an import cannot run in the background", store.ErrUnsupported)
	}
	h, err := hierarchy.Open(c)
	if err != nil {
		return ingest.Started{}, err
	}
	if _, err := h.Plan(ctx, placements(f)); err != nil {
		return ingest.Started{}, invalid(fmt.Errorf("import: %w", err))
	}
	total := 0
	for _, n := range f.Nodes {
		total += len(n.Chunks)
	}
	if !kb.importing.TryLock() {
		return ingest.Started{}, ErrImportRunning
	}
	job := store.Job{Kind: ImportJobKind, Collection: c.Name(), Total: total}
	describe := func(err error) string { return kb.Fail(context.Background(), err).Message }
	started, err := jobs.Go(ctx, js, job, describe, func(ctx context.Context, progress ingest.Progress) error {
		defer kb.importing.Unlock()
		rep, err := kb.runImport(ctx, c, f, func(r ImportReport) {
			progress(func(j *store.Job) { j.Chunks, j.Nodes = r.Chunks, r.Nodes })
		})
		if err == nil {
			kb.log.Info("import done", "collection", rep.Collection, "nodes", rep.Nodes, "created", rep.Created, "chunks", rep.Chunks, "written", rep.Written)
		}
		return err
	})
	if err != nil {
		kb.importing.Unlock()
	}
	return started, err
}

// placements are the file's nodes as hierarchy placements, without
// their chunks.
func placements(f *ImportFile) []hierarchy.Placement {
	ps := make([]hierarchy.Placement, len(f.Nodes))
	for k, in := range f.Nodes {
		ps[k] = hierarchy.Placement{Parent: in.Parent, Name: in.Name, Kind: in.Type, Triggers: in.Triggers}
	}
	return ps
}

func (kb *KB) runImport(ctx context.Context, c *store.Collection, f *ImportFile, progress func(ImportReport)) (*ImportReport, error) {
	h, err := hierarchy.Open(c)
	if err != nil {
		return nil, err
	}
	rep := &ImportReport{Collection: c.Name()}
	tell := func() {
		if progress != nil {
			progress(*rep)
		}
	}
	// The chunks' ids, and the nodes' paths they derive from, are known
	// before anything is written: the file names each node's parent, and
	// the path a new node gets is the one hierarchy.Place gives it.
	ps := placements(f)
	var docs []*document.Document
	at := map[string]int{} // doc id → index in docs: the last placement's text wins
	plan, err := h.Plan(ctx, ps)
	if err != nil {
		return rep, invalid(fmt.Errorf("import: %w", err))
	}
	for k, in := range f.Nodes {
		path := plan[k]
		for i, ch := range in.Chunks {
			d := document.New(ch.Text)
			d.SourceName = ch.Source
			if d.SourceName == "" {
				d.SourceName = "import:" + path
			}
			d.ID = ch.ID
			if d.ID == "" {
				d.ID = document.ChunkID(d.SourceType, d.SourceName+"#"+path, i, ch.Text)
			}
			md := ch.Metadata
			if len(in.Tags) > 0 {
				md = mergeTags(md, in.Tags)
			}
			if err := d.AddMetadata(md); err != nil {
				return rep, invalid(fmt.Errorf("import: node %q, chunk %d: %w", in.Name, i+1, err))
			}
			ps[k].Chunks = append(ps[k].Chunks, d)
			if j, ok := at[d.ID]; ok {
				docs[j] = d
			} else {
				at[d.ID] = len(docs)
				docs = append(docs, d)
			}
		}
	}
	if err := kb.writeImported(ctx, c, docs, func(batch, written int) {
		rep.Chunks += batch
		rep.Written += written
		tell()
	}); err != nil {
		return rep, fmt.Errorf("import: %w", err)
	}
	placed, err := h.Place(ctx, ps)
	if err != nil {
		return rep, fmt.Errorf("import: %w", err)
	}
	rep.Nodes, rep.Created = len(placed.Nodes), placed.Created
	if placed.Created+placed.Updated+placed.Attached > 0 {
		if _, err := h.RebuildLinks(ctx); err != nil {
			return rep, fmt.Errorf("import: %w", err)
		}
	}
	tell()
	return rep, nil
}

// writeImported stores the documents that are not stored as they are,
// importBatch at a time, embedding one batch while the store writes the
// one before; done gets each batch's size and how many of it were written.
func (kb *KB) writeImported(ctx context.Context, c *store.Collection, docs []*document.Document, done func(batch, written int)) error {
	type prepared struct {
		size int
		todo []*document.Document
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan prepared, 1)
	errc := make(chan error, 1)
	go func() {
		defer close(ready)
		for batch := range slices.Chunk(docs, importBatch) {
			todo, err := missing(ctx, c, batch)
			if err == nil && len(todo) > 0 {
				err = ingest.Prepare(ctx, c, kb.emb, todo, nil)
			}
			if err != nil {
				errc <- err
				return
			}
			select {
			case ready <- prepared{len(batch), todo}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for p := range ready {
		if len(p.todo) > 0 {
			if err := c.Upsert(ctx, p.todo); err != nil {
				cancel()
				for range ready { // let the embedding goroutine end
				}
				return fmt.Errorf("write to %q: %w", c.Name(), err)
			}
			for _, d := range p.todo {
				d.Embedding = nil // stored: keep the import's memory to its text
			}
		}
		done(p.size, len(p.todo))
	}
	select {
	case err := <-errc:
		return err
	default:
		return ctx.Err()
	}
}

// missing returns the documents of batch that are not stored as they are:
// new, or stored with other text, source or metadata.
func missing(ctx context.Context, c *store.Collection, batch []*document.Document) ([]*document.Document, error) {
	ids := make([]string, len(batch))
	for i, d := range batch {
		ids[i] = d.ID
	}
	have, err := c.Get(ctx, ids)
	if err != nil {
		return nil, err
	}
	old := make(map[string]*document.Document, len(have))
	for _, d := range have {
		old[d.ID] = d
	}
	var out []*document.Document
	for _, d := range batch {
		if o := old[d.ID]; o == nil || !sameStored(o, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// sameStored reports whether stored o holds what d would write.
func sameStored(o, d *document.Document) bool {
	if o.Content != d.Content || o.SourceType != d.SourceType || o.SourceName != d.SourceName {
		return false
	}
	a, err1 := json.Marshal(o.Metadata)
	b, err2 := json.Marshal(d.Metadata)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// mergeTags adds tags to the metadata's "tags" list, once each.
func mergeTags(md map[string]any, tags []string) map[string]any {
	out := make(map[string]any, len(md)+1)
	for k, v := range md {
		out[k] = v
	}
	var have []string
	if cur, ok := out["tags"].([]any); ok {
		for _, t := range cur {
			if s, ok := t.(string); ok {
				have = append(have, s)
			}
		}
	}
	for _, t := range tags {
		if !slices.Contains(have, t) {
			have = append(have, t)
		}
	}
	list := make([]any, len(have))
	for i, t := range have {
		list[i] = t
	}
	out["tags"] = list
	return out
}
