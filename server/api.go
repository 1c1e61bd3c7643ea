package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/store"
)

// CollectionPath names a collection in the path.
type CollectionPath struct {
	Collection string `path:"collection" maxLength:"48" doc:"Collection name"`
}

// CollectionInfo describes a collection as the caller sees it.
type CollectionInfo = quarry.CollectionInfo

// CollectionList is the body of the collection list.
type CollectionList struct {
	Collections []CollectionInfo `json:"collections"`
}

// NewCollection is the body of a collection creation.
type NewCollection struct {
	Name     string           `json:"name" maxLength:"48" doc:"1-48 lowercase letters, digits, '_' or '-'"`
	Fields   *document.Schema `json:"schema,omitempty" doc:"Metadata fields, e.g. {\"fields\":[{\"name\":\"tenant\",\"type\":\"string\",\"required\":true,\"filterable\":true}]}"`
	Embedder string           `json:"embedder,omitempty" doc:"The embedder as provider/model (e.g. hash/hash-512); it must be the server's, which is the default"`
	Language string           `json:"language,omitempty" doc:"Keyword analyzer language (english when empty)"`
}

// NewDocument is one text to store whole, as one passage.
type NewDocument struct {
	ID       string   `json:"id,omitempty" doc:"Optional id; a document with the same id is replaced"`
	Text     string   `json:"text" minLength:"1"`
	Source   string   `json:"source,omitempty" doc:"Source name to cite and to delete by (default: manual)"`
	Metadata Metadata `json:"metadata,omitempty"`
}

// Metadata is a JSON object of metadata. Numbers keep their integer-ness:
// 2026 is an integer, 2026.0 a float (SEMANTICS §2).
type Metadata map[string]any

// UnmarshalJSON implements json.Unmarshaler.
func (m *Metadata) UnmarshalJSON(b []byte) error {
	v, err := document.DecodeJSONValue(b)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	switch v := v.(type) {
	case nil:
		*m = nil
	case map[string]any:
		*m = v
	default:
		return fmt.Errorf("metadata must be a JSON object, got %s", document.TypeName(v))
	}
	return nil
}

// Schema describes Metadata in the OpenAPI document.
func (Metadata) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, AdditionalProperties: true, Description: "Metadata: strings, numbers, booleans, lists"}
}

// DocumentsBody is the body of a document upsert.
type DocumentsBody struct {
	Documents []NewDocument `json:"documents" minItems:"1" maxItems:"256"`
}

// DocumentsResult is the result of a document upsert.
type DocumentsResult struct {
	Collection string   `json:"collection"`
	IDs        []string `json:"ids"`
}

// DeleteBody selects documents to delete.
type DeleteBody struct {
	Source string          `json:"source,omitempty" doc:"Delete every passage of this source name"`
	Filter json.RawMessage `json:"filter,omitempty" doc:"Delete every passage matching this filter, in any syntax (text string, short or canonical JSON)"`
}

// DeleteResult counts deleted passages.
type DeleteResult struct {
	Deleted int `json:"deleted"`
}

// SearchBody is a search.
type SearchBody struct {
	Query     string          `json:"query" minLength:"1" doc:"Question or keywords"`
	Mode      string          `json:"mode,omitempty" enum:"auto,keyword,vector,hybrid," doc:"auto (the knowledge hierarchy's triggers, then the collection's search default: its calibration's choice, else the rule for its embedder), keyword (BM25), vector or hybrid; the server's default when empty"`
	Filter    json.RawMessage `json:"filter,omitempty" doc:"Metadata filter in any syntax: a text string such as \"year >= 2024\", or JSON such as {\"tenant\":\"acme\"}"`
	TopK      int             `json:"top_k,omitempty" minimum:"0" maximum:"100" doc:"Results to return (server default when 0)"`
	Explain   bool            `json:"explain,omitempty" doc:"Report each result's rank and score per branch"`
	Hierarchy bool            `json:"hierarchy,omitempty" doc:"Place each result in the knowledge hierarchy: its node, the node's neighbours, the results linked to it"`
	Profile   string          `json:"profile,omitempty" maxLength:"48" doc:"Search through this agent profile (GET /v1/profiles): its view narrows the search and its settings stand for what the request leaves empty; a key limited to one profile uses it by default"`
}

// CalibrateBody asks for a collection's search default to be measured.
type CalibrateBody struct {
	Queries int  `json:"queries,omitempty" minimum:"0" maximum:"5000" doc:"Pseudo-queries to draw from the collection (300 when 0)"`
	DryRun  bool `json:"dry_run,omitempty" doc:"Measure without recording"`
	Reset   bool `json:"reset,omitempty" doc:"Remove the calibration: searches follow the rule for the collection's embedder again"`
}

// CalibrateResult is a calibration with every configuration's figure.
type CalibrateResult = quarry.CalibrateResult

// Passage is one retrieved passage with where it came from, as every
// surface returns it.
type Passage = quarry.Passage

// SearchResult is the result of a search.
type SearchResult = quarry.SearchResult

// AskBody is a question.
type AskBody struct {
	Question   string          `json:"question" minLength:"1"`
	Mode       string          `json:"mode,omitempty" enum:"auto,keyword,vector,hybrid," doc:"Retrieval mode; hybrid when empty, unless the server sets one"`
	Filter     json.RawMessage `json:"filter,omitempty" doc:"Metadata filter in any syntax, as for search"`
	TopK       int             `json:"top_k,omitempty" minimum:"0" maximum:"100" doc:"Passages to read (server default when 0)"`
	Thread     string          `json:"thread,omitempty" maxLength:"100" doc:"Conversation thread: earlier turns are read and this one recorded"`
	Memory     []string        `json:"memory,omitempty" maxItems:"16" doc:"Threads (this caller's) whose past exchanges are recalled beside the documents"`
	Post       []string        `json:"post,omitempty" maxItems:"16" doc:"Post-processors after the server's own: dedupe, mmr[=LAMBDA], threshold[=MIN], adaptive[=MULTIPLIER], neighbours[=WINDOW], pack[=TOKENS], rerank=cohere|jina|voyage|llm (no addresses)"`
	Transforms []string        `json:"transforms,omitempty" maxItems:"8" doc:"Query transforms (need a chat model): rewrite, hyde, decompose, multi-query"`
	Schema     json.RawMessage `json:"schema,omitempty" doc:"A JSON Schema: the answer is JSON valid against it (needs a chat model)"`
	// MinRelevance is AskRequest.MinRelevance.
	MinRelevance float64 `json:"min_relevance,omitempty" maximum:"1" doc:"Abstain when the best passage covers less of the question than this (0 to 1); the server's floor when 0, none when negative"`
	Profile      string  `json:"profile,omitempty" maxLength:"48" doc:"Answer through this agent profile (GET /v1/profiles): its view, mode, top-k, model and post-processors stand for what the request leaves empty"`
	Agent        bool    `json:"agent,omitempty" doc:"Gather the passages in steps: triage, searches and expansions under this caller's scope, a sufficiency check after each round, within the server's [agent] budget; abstains when what it gathered does not suffice. Streamed, each step is a step event"`
}

// Step is one step of an agent's run, streamed as a step event.
type Step = agent.Step

// AskResult is a cited answer.
type AskResult = quarry.AskResult

// TextEvent is a piece of a streamed answer.
type TextEvent struct {
	Text string `json:"text"`
}

// Job is an ingestion or import job.
type Job struct {
	ID         string `json:"id"`
	Kind       string `json:"kind" enum:"ingest,import" doc:"ingest (folders, uploads) or import (knowledge nodes)"`
	Collection string `json:"collection"`
	State      string `json:"state" enum:"running,done,failed,interrupted"`
	Files      int    `json:"files" doc:"Files handled so far"`
	Total      int    `json:"total" doc:"Files found; for an import, the file's chunks"`
	Chunks     int    `json:"chunks" doc:"Chunks written so far"`
	Nodes      int    `json:"nodes,omitempty" doc:"Knowledge nodes an import placed, once it has"`
	Failed     int    `json:"failed" doc:"Files that could not be parsed"`
	Ignored    int    `json:"ignored" doc:"Files not read on purpose: images, binaries, too large"`
	NoText     int    `json:"no_text" doc:"Files read that hold no text: empty, a scan that needs OCR, encrypted"`
	Error      string `json:"error,omitempty"`
	Started    string `json:"started"`
	Updated    string `json:"updated"`
	Finished   string `json:"finished,omitempty"`
}

// JobStarted is the answer to an upload or ingestion.
type JobStarted struct {
	JobID   string   `json:"job_id"`
	State   string   `json:"state"`
	Sources []string `json:"sources,omitempty" doc:"Source names the uploaded files get"`
}

// JobList lists jobs.
type JobList struct {
	Jobs []Job `json:"jobs"`
}

// IngestBody names folders or files on the server to ingest.
type IngestBody struct {
	Paths    []string `json:"paths" minItems:"1" doc:"Files or folders inside the server's ingest roots; relative paths start at the first root"`
	Metadata Metadata `json:"metadata,omitempty" doc:"Metadata added to every chunk"`
	Include  []string `json:"include,omitempty" doc:"Take only files matching one of these .gitignore-style patterns (e.g. *.md), relative to each folder"`
	Exclude  []string `json:"exclude,omitempty" doc:"Leave out files and folders matching these .gitignore-style patterns (e.g. drafts/)"`
	Prefix   string   `json:"prefix,omitempty" maxLength:"200" doc:"Name this run's sources PREFIX/path, so folders with files of the same names can share a collection"`
	Replace  bool     `json:"replace,omitempty" doc:"Let these files take over source names other files hold (refused otherwise, with 409)"`
}

// Thread is a conversation.
type Thread struct {
	ID    string       `json:"id"`
	Turns []store.Turn `json:"turns"`
}

// Status is the server's state as a key sees it.
type Status struct {
	Version           string           `json:"version"`
	DefaultCollection string           `json:"default_collection"`
	Model             embed.ModelInfo  `json:"model"`
	Chat              bool             `json:"chat" doc:"Whether a chat model writes answers (else they are extractive)"`
	Keys              bool             `json:"keys" doc:"Whether requests need an API key"`
	Permission        string           `json:"permission" doc:"What this caller may do"`
	Scoped            bool             `json:"scoped" doc:"Whether a mandatory filter holds this caller's requests"`
	Profiles          []string         `json:"profiles,omitempty" doc:"The agent profiles this caller is limited to: it searches and asks only through them (GET /v1/profiles)"`
	Uploads           bool             `json:"uploads"`
	Roots             []string         `json:"roots,omitempty" doc:"Folders the ingest endpoint reads (admin keys only)"`
	Collections       []CollectionInfo `json:"collections"`
	// LastJob and Jobs are the ingestion jobs', for callers without a
	// filter.
	LastJob *Job             `json:"last_job,omitempty"`
	Jobs    quarry.JobCounts `json:"jobs"`
}

type body[T any] struct {
	Body T
}

// register declares every operation.
func (s *Server) register() {
	// A key is needed once the server has one; without keys, none is.
	read := []map[string][]string{{"apiKey": {}}, {}}
	op := func(id, method, path, summary string, tags ...string) huma.Operation {
		return huma.Operation{OperationID: id, Method: method, Path: path, Summary: summary, Tags: tags, Security: read,
			MaxBodyBytes: s.cfg.MaxBodyBytes}
	}
	huma.Register(s.api, op("get-status", http.MethodGet, "/v1/status", "Server and collections status", "status"), s.status)
	huma.Register(s.api, op("list-profiles", http.MethodGet, "/v1/profiles", "List the agent profiles open to the caller", "profiles"), s.listProfiles)
	s.registerGraph(op)
	huma.Register(s.api, op("list-collections", http.MethodGet, "/v1/collections", "List collections", "collections"), s.listCollections)
	create := op("create-collection", http.MethodPost, "/v1/collections", "Create a collection with a schema", "collections")
	create.DefaultStatus = http.StatusCreated
	huma.Register(s.api, create, s.createCollection)
	drop := op("delete-collection", http.MethodDelete, "/v1/collections/{collection}", "Delete a collection and its documents", "collections")
	drop.DefaultStatus = http.StatusNoContent
	huma.Register(s.api, drop, s.deleteCollection)
	huma.Register(s.api, op("upsert-documents", http.MethodPost, "/v1/collections/{collection}/documents", "Add or replace documents given as JSON", "documents"), s.upsertDocuments)
	huma.Register(s.api, op("delete-documents", http.MethodPost, "/v1/collections/{collection}/documents/delete", "Delete documents by filter or source", "documents"), s.deleteDocuments)
	up := op("upload-files", http.MethodPost, "/v1/collections/{collection}/uploads", "Upload files to ingest as a job", "documents")
	up.DefaultStatus = http.StatusAccepted
	up.MaxBodyBytes = s.cfg.MaxUploadBytes
	up.BodyReadTimeout = s.cfg.RequestTimeout // a large file on a slow link
	huma.Register(s.api, up, s.upload)
	ing := op("ingest-paths", http.MethodPost, "/v1/collections/{collection}/ingest", "Ingest folders from the server's ingest roots as a job", "documents")
	ing.DefaultStatus = http.StatusAccepted
	huma.Register(s.api, ing, s.ingestPaths)
	huma.Register(s.api, op("put-objects", http.MethodPost, "/v1/collections/{collection}/objects", "Add or replace JSON objects (one, or an array), one passage each", "documents"), s.putObjects)
	huma.Register(s.api, op("delete-object", http.MethodDelete, "/v1/collections/{collection}/objects/{id}", "Delete an object's passages", "documents"), s.deleteObject)
	imp := op("import-nodes", http.MethodPost, "/v1/collections/{collection}/import", "Import knowledge nodes and their chunks as a job", "hierarchy")
	imp.DefaultStatus = http.StatusAccepted
	imp.MaxBodyBytes = max(s.cfg.MaxBodyBytes, quarry.MaxImportBytes)
	imp.BodyReadTimeout = s.cfg.RequestTimeout
	huma.Register(s.api, imp, s.importNodes)
	huma.Register(s.api, op("doctor", http.MethodGet, "/v1/doctor", "Check the installation and the knowledge base, offline", "status"), s.doctor)
	huma.Register(s.api, op("index", http.MethodPost, "/v1/index", "Cut files from the server's ingest roots into chunks, storing nothing", "documents"), s.index)
	huma.Register(s.api, op("search", http.MethodPost, "/v1/collections/{collection}/search", "Search passages", "search"), s.search)
	huma.Register(s.api, op("ask", http.MethodPost, "/v1/collections/{collection}/ask", "Answer a question with citations", "ask"), s.ask)
	huma.Register(s.api, op("calibrate-collection", http.MethodPost, "/v1/collections/{collection}/calibrate",
		"Measure which retrieval configuration ranks the collection's own text best and make it the collection's search default", "collections"), s.calibrate)
	registerStream(s, op("ask-stream", http.MethodPost, "/v1/collections/{collection}/ask/stream", "Answer a question as server-sent events", "ask"),
		map[string]any{"step": Step{}, "text": TextEvent{}, "citation": Passage{}, "answer": AskResult{}, "error": Error{}}, s.askStream)
	huma.Register(s.api, op("list-jobs", http.MethodGet, "/v1/jobs", "List recent ingestion jobs", "jobs"), s.listJobs)
	huma.Register(s.api, op("get-job", http.MethodGet, "/v1/jobs/{id}", "An ingestion job's state and progress", "jobs"), s.getJob)
	registerStream(s, op("job-events", http.MethodGet, "/v1/jobs/{id}/events", "Follow a job's progress as server-sent events", "jobs"),
		map[string]any{"progress": Job{}, "error": Error{}}, s.jobEvents)
	huma.Register(s.api, op("get-thread", http.MethodGet, "/v1/threads/{thread}", "A conversation thread's turns", "threads"), s.getThread)
	dt := op("delete-thread", http.MethodDelete, "/v1/threads/{thread}", "Delete a conversation thread", "threads")
	dt.DefaultStatus = http.StatusNoContent
	huma.Register(s.api, dt, s.deleteThread)
	s.registerHierarchy()
}

// useErrorSchema documents Error as the body of every error response.
func useErrorSchema(api huma.API) {
	oa := api.OpenAPI()
	errSchema := oa.Components.Schemas.Schema(reflect.TypeFor[Error](), true, "Error")
	for _, item := range oa.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Delete, item.Patch} {
			if op == nil {
				continue
			}
			for code, resp := range op.Responses {
				if code == "default" || strings.HasPrefix(code, "4") || strings.HasPrefix(code, "5") {
					resp.Content = map[string]*huma.MediaType{problemJSON: {Schema: errSchema}}
				}
			}
		}
	}
}

// authorize checks the caller may do perm on collection ("" for none).
func (s *Server) authorize(ctx context.Context, perm keys.Permission, collection string) (*principal, error) {
	p := principalFrom(ctx)
	if p == nil {
		return nil, apiError(http.StatusUnauthorized, CodeUnauthorized, "no credentials")
	}
	if !p.perm.Allows(perm) {
		return nil, apiError(http.StatusForbidden, CodeForbidden, fmt.Sprintf("this key may %s; this needs %s", p.perm, perm))
	}
	if collection != "" && !p.allows(collection) {
		return nil, apiError(http.StatusForbidden, CodeForbidden, fmt.Sprintf("collection %q is not open to this key", collection))
	}
	return p, nil
}

// errScoped refuses what would reach past a key's filter.
func errScoped(what string) *Error {
	return apiError(http.StatusForbidden, CodeForbidden, what+" reaches every document, so it is not open to a key with a filter or limited to profiles")
}

// scope is what the caller may reach, as the core takes it: the key's
// collections, mandatory filter, raw-filter grant, permission and thread
// space.
func (s *Server) scope(p *principal) quarry.Scope {
	base := quarry.Scope{AllowRawFilters: s.cfg.AllowRawFilters}
	if p.key == nil {
		return base
	}
	sc, err := quarry.KeyScope(base, *p.key)
	if err != nil { // authenticate parsed the filter; should it fail now, the key reaches nothing
		s.log.Error("server: a key's scope", "key", p.key.ID, "err", err)
		return quarry.Scope{Collections: []string{"\x00none"}, Profiles: []string{"\x00none"}, ReadOnly: true, NoServerPaths: true, Owner: p.key.ID}
	}
	return sc
}

// collection opens a collection the caller may use, with the core's
// checks (quarry.KB.ScopedCollection); with create, a missing one is
// created.
func (s *Server) collection(ctx context.Context, p *principal, name string, create bool) (*store.Collection, error) {
	c, err := s.kb.ScopedCollection(ctx, s.scope(p), name, create)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return c, nil
}

// requestFilter parses a request's filter in any syntax; nil when there is
// none. The core checks it against the collection and the caller's scope.
func requestFilter(raw json.RawMessage) (filter.Expr, error) {
	f, err := filter.ParseValue(raw)
	if err != nil {
		return nil, apiError(http.StatusBadRequest, CodeInvalidFilter, "invalid filter: "+err.Error())
	}
	return f, nil
}

func (s *Server) status(ctx context.Context, _ *struct{}) (*body[Status], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	sc := s.scope(p)
	core, err := s.kb.Status(ctx, sc)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	st := Status{Version: s.api.OpenAPI().Info.Version, DefaultCollection: core.DefaultCollection, Model: core.Model, Profiles: sc.Profiles,
		Chat: core.Chat, Keys: s.Keyed(), Permission: string(p.perm), Scoped: p.scope != nil,
		Uploads: true, Collections: core.Collections, Jobs: core.Jobs}
	if core.LastJob != nil {
		j := jobOut(*core.LastJob)
		st.LastJob = &j
	}
	if s.roots != nil && p.perm.Allows(keys.PermAdmin) && len(sc.Profiles) == 0 {
		st.Roots = s.roots.Dirs()
	}
	return &body[Status]{Body: st}, nil
}

func (s *Server) listCollections(ctx context.Context, _ *struct{}) (*body[CollectionList], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	cs, err := s.kb.Collections(ctx, s.scope(p))
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[CollectionList]{Body: CollectionList{Collections: cs}}, nil
}

func (s *Server) createCollection(ctx context.Context, in *body[NewCollection]) (*body[CollectionInfo], error) {
	p, err := s.authorize(ctx, keys.PermAdmin, in.Body.Name)
	if err != nil {
		return nil, err
	}
	info, err := s.kb.CreateCollection(ctx, s.scope(p), quarry.NewCollectionRequest{Name: in.Body.Name, Schema: in.Body.Fields,
		Language: in.Body.Language, Embedder: in.Body.Embedder})
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[CollectionInfo]{Body: info}, nil
}

func (s *Server) deleteCollection(ctx context.Context, in *CollectionPath) (*struct{}, error) {
	p, err := s.authorize(ctx, keys.PermAdmin, in.Collection)
	if err != nil {
		return nil, err
	}
	if err := s.kb.DropCollection(ctx, s.scope(p), in.Collection); err != nil {
		return nil, s.fromLibrary(err)
	}
	return nil, nil
}

type upsertInput struct {
	CollectionPath
	Body DocumentsBody
}

func (s *Server) upsertDocuments(ctx context.Context, in *upsertInput) (*body[DocumentsResult], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	if len(in.Body.Documents) > quarry.MaxDocuments {
		return nil, apiError(http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("at most %d documents per request, got %d", quarry.MaxDocuments, len(in.Body.Documents)))
	}
	docs := make([]quarry.NewDocument, len(in.Body.Documents))
	for i, nd := range in.Body.Documents {
		docs[i] = quarry.NewDocument{ID: nd.ID, Text: nd.Text, Source: nd.Source, Metadata: nd.Metadata}
	}
	res, err := s.kb.AddDocuments(ctx, s.scope(p), in.Collection, docs)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	s.metrics.chunks.Add(float64(len(docs)))
	return &body[DocumentsResult]{Body: DocumentsResult{Collection: res.Collection, IDs: res.IDs}}, nil
}

type deleteInput struct {
	CollectionPath
	Body DeleteBody
}

func (s *Server) deleteDocuments(ctx context.Context, in *deleteInput) (*body[DeleteResult], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	f, err := requestFilter(in.Body.Filter)
	if err != nil {
		return nil, err
	}
	n, err := s.kb.Delete(ctx, s.scope(p), quarry.DeleteRequest{Collection: in.Collection, Source: in.Body.Source, Filter: f})
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[DeleteResult]{Body: DeleteResult{Deleted: n}}, nil
}

type calibrateInput struct {
	CollectionPath
	Body CalibrateBody
}

// calibrate changes what every caller's searches run: a write, and the
// core refuses it to a key with a filter.
func (s *Server) calibrate(ctx context.Context, in *calibrateInput) (*body[CalibrateResult], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	res, err := s.kb.Calibrate(ctx, s.scope(p), quarry.CalibrateRequest{Collection: in.Collection, Queries: in.Body.Queries, DryRun: in.Body.DryRun, Reset: in.Body.Reset})
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[CalibrateResult]{Body: *res}, nil
}

// ProfileList is the agent profiles a caller may use.
type ProfileList struct {
	Profiles []ProfileInfo `json:"profiles"`
}

// ProfileInfo is an agent profile as the API shows it.
type ProfileInfo = quarry.ProfileInfo

func (s *Server) listProfiles(ctx context.Context, _ *struct{}) (*body[ProfileList], error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, err
	}
	out := ProfileList{Profiles: []ProfileInfo{}}
	for _, pr := range s.kb.Profiles(s.scope(p)) {
		out.Profiles = append(out.Profiles, pr.Info())
	}
	return &body[ProfileList]{Body: out}, nil
}

type searchInput struct {
	CollectionPath
	Body SearchBody
}

func (s *Server) search(ctx context.Context, in *searchInput) (*body[SearchResult], error) {
	p, err := s.authorize(ctx, keys.PermRead, in.Collection)
	if err != nil {
		return nil, err
	}
	f, err := requestFilter(in.Body.Filter)
	if err != nil {
		return nil, err
	}
	b := in.Body
	res, err := s.kb.Search(ctx, s.scope(p), quarry.SearchRequest{Collection: in.Collection, Query: b.Query, Mode: b.Mode,
		Filter: f, TopK: b.TopK, Explain: b.Explain, Hierarchy: b.Hierarchy, Profile: b.Profile})
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[SearchResult]{Body: *res}, nil
}

type askInput struct {
	CollectionPath
	Body AskBody
}

func (s *Server) askRequest(ctx context.Context, in *askInput) (quarry.Scope, quarry.AskRequest, error) {
	p, err := s.authorize(ctx, keys.PermRead, in.Collection)
	if err != nil {
		return quarry.Scope{}, quarry.AskRequest{}, err
	}
	f, err := requestFilter(in.Body.Filter)
	if err != nil {
		return quarry.Scope{}, quarry.AskRequest{}, err
	}
	b := in.Body
	return s.scope(p), quarry.AskRequest{Collection: in.Collection, Question: b.Question, Mode: b.Mode, Filter: f, TopK: b.TopK,
		Thread: b.Thread, Memory: b.Memory, Post: b.Post, Transforms: b.Transforms, Schema: b.Schema,
		MinRelevance: b.MinRelevance, Profile: b.Profile, Agent: b.Agent}, nil
}

func (s *Server) ask(ctx context.Context, in *askInput) (*body[AskResult], error) {
	sc, req, err := s.askRequest(ctx, in)
	if err != nil {
		return nil, err
	}
	a, err := s.kb.Ask(ctx, sc, req)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[AskResult]{Body: *a}, nil
}

// askStream checks the request before the stream opens; then the answer
// streams as text events, a citation event per cited passage and the
// answer, or an error event if generation fails midway.
func (s *Server) askStream(ctx context.Context, in *askInput) (iter.Seq[event], error) {
	sc, req, err := s.askRequest(ctx, in)
	if err != nil {
		return nil, err
	}
	events, err := s.kb.AskStream(ctx, sc, req)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return func(yield func(event) bool) {
		for ev, err := range events {
			if err != nil {
				yield(event{"error", s.fromLibrary(err)})
				return
			}
			if ev.Step != nil && !yield(event{"step", *ev.Step}) {
				return
			}
			if ev.Text != "" && !yield(event{"text", TextEvent{Text: ev.Text}}) {
				return
			}
			if ev.Result != nil {
				for _, c := range ev.Result.Citations {
					if !yield(event{"citation", c}) {
						return
					}
				}
				yield(event{"answer", *ev.Result})
			}
		}
	}, nil
}

type threadPath struct {
	Thread string `path:"thread" maxLength:"100"`
}

// thread is the caller's thread store and the stored id of its thread.
func (s *Server) thread(ctx context.Context, name string) (store.ThreadStore, string, error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return nil, "", err
	}
	id, err := s.scope(p).ThreadID(name)
	if err != nil {
		return nil, "", s.fromLibrary(err)
	}
	ts, err := s.kb.Store().Threads()
	if err != nil {
		return nil, "", s.fromLibrary(err)
	}
	return ts, id, nil
}

func (s *Server) getThread(ctx context.Context, in *threadPath) (*body[Thread], error) {
	ts, id, err := s.thread(ctx, in.Thread)
	if err != nil {
		return nil, err
	}
	turns, err := ts.Turns(ctx, id, 0)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	return &body[Thread]{Body: Thread{ID: in.Thread, Turns: turns}}, nil
}

func (s *Server) deleteThread(ctx context.Context, in *threadPath) (*struct{}, error) {
	ts, id, err := s.thread(ctx, in.Thread)
	if err != nil {
		return nil, err
	}
	if err := ts.DeleteThread(ctx, id); err != nil {
		return nil, s.fromLibrary(err)
	}
	return nil, nil
}
