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

// Links is a collection's link graph.
type Links struct {
	Collection string                `json:"collection"`
	Links      []hierarchy.GraphLink `json:"links"`
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
	huma.Register(s.api, op("get-links", "/v1/collections/{collection}/links", "The links between the collection's knowledge nodes, heaviest first"), s.links)
}

func (s *Server) links(ctx context.Context, in *CollectionPath) (*body[Links], error) {
	p, err := s.authorize(ctx, keys.PermRead, in.Collection)
	if err != nil {
		return nil, err
	}
	g, err := s.kb.Links(ctx, s.scope(p), in.Collection)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[Links]{Body: Links{Collection: in.Collection, Links: g}}, nil
}

func (s *Server) tree(ctx context.Context, in *CollectionPath) (*body[Tree], error) {
	p, err := s.authorize(ctx, keys.PermRead, in.Collection)
	if err != nil {
		return nil, err
	}
	t, err := s.kb.Tree(ctx, s.scope(p), in.Collection)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[Tree]{Body: Tree{Collection: in.Collection, Root: t}}, nil
}

func (s *Server) health(ctx context.Context, in *CollectionPath) (*body[Health], error) {
	p, err := s.authorize(ctx, keys.PermRead, in.Collection)
	if err != nil {
		return nil, err
	}
	rep, err := s.kb.Health(ctx, s.scope(p), in.Collection, false)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[Health]{Body: Health{Report: rep.Report}}, nil
}
