package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/keys"
)

// IndexBody is the request of the index endpoint.
type IndexBody struct {
	Paths []string `json:"paths" minItems:"1" doc:"Files or folders inside the server's ingest roots; relative paths start at the first root"`
	Limit int      `json:"limit,omitempty" minimum:"0" maximum:"1000" doc:"The most chunks to return (default and most 1000)"`
}

type indexInput struct {
	Body IndexBody
}

// IndexResult is the chunks ingestion would make of files, stored
// nowhere, and every file's outcome.
type IndexResult = quarry.IndexResult

// index cuts files from the server's ingest roots into the chunks
// ingestion would make (quarry.KB.Index): admin keys only, as ingesting
// those folders is, and never a path outside the roots.
func (s *Server) index(ctx context.Context, in *indexInput) (*body[IndexResult], error) {
	p, err := s.authorize(ctx, keys.PermAdmin, "")
	if err != nil {
		return nil, err
	}
	if s.roots == nil {
		return nil, apiError(http.StatusForbidden, CodeForbidden, "reading server folders is off: start the server with --root")
	}
	paths, err := s.roots.ConfineAll(in.Body.Paths)
	if err != nil {
		return nil, apiError(http.StatusForbidden, CodeForbidden, "refused: "+err.Error())
	}
	res, err := s.kb.Index(ctx, s.scope(p), quarry.IndexRequest{Paths: paths, Limit: in.Body.Limit})
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[IndexResult]{Body: *res}, nil
}

// Doctor is the self-check of the installation and the knowledge base.
type Doctor = quarry.Doctor

type doctorInput struct{}

// doctor runs the offline self-check (quarry.KB.Doctor): admin keys only,
// since it names the server's paths and versions.
func (s *Server) doctor(ctx context.Context, _ *doctorInput) (*body[Doctor], error) {
	p, err := s.authorize(ctx, keys.PermAdmin, "")
	if err != nil {
		return nil, err
	}
	d, err := s.kb.Doctor(ctx, s.scope(p))
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[Doctor]{Body: *d}, nil
}

type importInput struct {
	CollectionPath
	Body quarry.ImportFile
}

// importNodes starts an import of knowledge nodes and their chunks as a
// job (quarry.KB.StartImport) and answers with its id at once: write keys
// without a filter, since the hierarchy spans every document.
func (s *Server) importNodes(ctx context.Context, in *importInput) (*body[JobStarted], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	f := in.Body
	f.Collection = "" // the path names the collection
	st, err := s.kb.StartImport(ctx, s.scope(p), in.Collection, &f, s.jobs)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[JobStarted]{Body: JobStarted{JobID: st.ID, State: st.State}}, nil
}

type objectsInput struct {
	CollectionPath
	// Body is kept as sent: an object's fields are read in their order.
	Body json.RawMessage `doc:"A JSON object, or an array of objects, each named by its id (or @self.id)"`
}

// ObjectsResult is what an objects request stored.
type ObjectsResult = quarry.ObjectsResult

// putObjects stores JSON objects, one or an array (quarry.KB.PutObjects):
// write keys, each object held to the key's filter.
func (s *Server) putObjects(ctx context.Context, in *objectsInput) (*body[ObjectsResult], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	res, err := s.kb.PutObjects(ctx, s.scope(p), in.Collection, in.Body)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[ObjectsResult]{Body: *res}, nil
}

type objectPath struct {
	CollectionPath
	ID string `path:"id" maxLength:"512"`
}

// deleteObject deletes an object's passages under the key's filter.
func (s *Server) deleteObject(ctx context.Context, in *objectPath) (*body[DeleteResult], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	n, err := s.kb.DeleteObject(ctx, s.scope(p), in.Collection, in.ID)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[DeleteResult]{Body: DeleteResult{Deleted: n}}, nil
}
