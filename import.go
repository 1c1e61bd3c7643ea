package quarry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/hierarchy"
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
	// Created counts the new ones. Chunks were written and placed.
	Nodes   int `json:"nodes"`
	Created int `json:"created"`
	Chunks  int `json:"chunks"`
}

// ParseImport reads an import file's YAML; unknown keys are errors, so a
// typo is reported, not ignored.
func ParseImport(r io.Reader) (*ImportFile, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if len(b) > MaxImportBytes {
		return nil, invalid(fmt.Errorf("import: the file is over %d MiB", MaxImportBytes>>20))
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f ImportFile
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, invalid(fmt.Errorf("import: %w", err))
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

// Import writes an import file's nodes and chunks into a collection (the
// file's, else collection, else the default), made when missing: each
// node is found or made under its parent with its triggers merged in
// (hierarchy.EnsureNode), and its chunks are embedded, stored and placed
// under it. Running it again changes nothing. Importing changes the
// hierarchy, which spans every document, so the scope must reach them all
// and may write.
func (kb *KB) Import(ctx context.Context, sc Scope, collection string, f *ImportFile) (*ImportReport, error) {
	if sc.ReadOnly || !sc.MayReachAll() {
		return nil, fmt.Errorf("%w: importing nodes changes the knowledge hierarchy, which is not open to this caller (read-only, or limited by a filter)", ErrForbidden)
	}
	if f.Collection != "" {
		collection = f.Collection
	}
	c, err := kb.collection(ctx, sc, collection, true)
	if err != nil {
		return nil, err
	}
	h, err := hierarchy.Open(c)
	if err != nil {
		return nil, err
	}
	rep := &ImportReport{Collection: c.Name()}
	before, err := h.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	for _, in := range f.Nodes {
		n, err := h.EnsureNode(ctx, in.Parent, in.Name, in.Type, in.Triggers)
		if err != nil {
			return rep, invalid(fmt.Errorf("import: node %q: %w", in.Name, err))
		}
		rep.Nodes++
		if len(in.Chunks) == 0 {
			continue
		}
		docs := make([]*document.Document, len(in.Chunks))
		for i, ch := range in.Chunks {
			d := document.New(ch.Text)
			d.SourceName = ch.Source
			if d.SourceName == "" {
				d.SourceName = "import:" + n.Path
			}
			d.ID = ch.ID
			if d.ID == "" {
				d.ID = document.ChunkID(d.SourceType, d.SourceName+"#"+n.Path, i, ch.Text)
			}
			md := ch.Metadata
			if len(in.Tags) > 0 {
				md = mergeTags(md, in.Tags)
			}
			if err := d.AddMetadata(md); err != nil {
				return rep, invalid(fmt.Errorf("import: node %q, chunk %d: %w", in.Name, i+1, err))
			}
			docs[i] = d
		}
		vecs, err := embed.Batched{Embedder: kb.emb}.Embed(ctx, contents(docs))
		if err != nil {
			return rep, fmt.Errorf("import: node %q: embed: %w", in.Name, err)
		}
		for i, v := range vecs {
			docs[i].Embedding = v
		}
		if err := c.Upsert(ctx, docs); err != nil {
			return rep, fmt.Errorf("import: node %q: %w", in.Name, err)
		}
		ids := make([]string, len(docs))
		for i, d := range docs {
			ids[i] = d.ID
		}
		if _, err := h.AttachChunks(ctx, n.Path, ids); err != nil {
			return rep, fmt.Errorf("import: node %q: %w", in.Name, err)
		}
		rep.Chunks += len(docs)
	}
	after, err := h.Nodes(ctx)
	if err != nil {
		return rep, err
	}
	rep.Created = len(after) - len(before)
	if rep.Created > 0 {
		if _, err := h.RebuildLinks(ctx); err != nil {
			return rep, err
		}
	}
	return rep, nil
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

func contents(docs []*document.Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Content
	}
	return out
}
