package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/quarry-rag/quarry/hierarchy"
	"github.com/quarry-rag/quarry/keys"
)

// Tree is a collection's knowledge hierarchy.
type Tree struct {
	Collection string `json:"collection"`
	// Root is nil when the collection has no hierarchy yet.
	Root *hierarchy.TreeNode `json:"root"`
}

// Health is a collection's audit.
type Health struct {
	Report *hierarchy.Report `json:"report"`
}

func (s *Server) registerHierarchy() {
	op := func(id, path, summary string) huma.Operation {
		return huma.Operation{OperationID: id, Method: http.MethodGet, Path: path, Summary: summary, Tags: []string{"hierarchy"},
			Security: []map[string][]string{{"apiKey": {}}, {}}}
	}
	huma.Register(s.api, op("get-tree", "/v1/collections/{collection}/tree", "The collection's knowledge hierarchy"), s.tree)
	huma.Register(s.api, op("get-health", "/v1/collections/{collection}/health", "The collection's health audit"), s.health)
}

// hierarchyOf opens a collection's hierarchy for a caller. Keys with a
// filter are refused: nodes span every document of a collection.
func (s *Server) hierarchyOf(ctx context.Context, coll string) (*hierarchy.Hierarchy, error) {
	p, err := s.authorize(ctx, keys.PermRead, coll)
	if err != nil {
		return nil, err
	}
	if p.scope != nil {
		return nil, errScoped("the knowledge hierarchy")
	}
	c, err := s.collection(ctx, p, coll, false)
	if err != nil {
		return nil, err
	}
	h, err := hierarchy.Open(c)
	if err != nil {
		return nil, fromLibrary(err)
	}
	return h, nil
}

func (s *Server) tree(ctx context.Context, in *CollectionPath) (*body[Tree], error) {
	h, err := s.hierarchyOf(ctx, in.Collection)
	if err != nil {
		return nil, err
	}
	t, err := h.Tree(ctx)
	if err != nil {
		return nil, fromLibrary(err)
	}
	return &body[Tree]{Body: Tree{Collection: in.Collection, Root: t}}, nil
}

func (s *Server) health(ctx context.Context, in *CollectionPath) (*body[Health], error) {
	h, err := s.hierarchyOf(ctx, in.Collection)
	if err != nil {
		return nil, err
	}
	rep, err := h.Audit(ctx, hierarchy.AuditOptions{Model: s.kb.Embedder().Model()})
	if err != nil {
		return nil, fromLibrary(err)
	}
	return &body[Health]{Body: Health{Report: rep}}, nil
}
