// Package quarry is Quarry's front door: open a knowledge base, take a
// collection bound to its embedder, ingest, search and ask.
//
//	kb, err := quarry.Open(ctx, "./.quarry", quarry.Create())
//	if err != nil { … }
//	defer kb.Close()
//	docs, err := kb.Collection(ctx, "")
//	_, err = docs.Ingest(ctx, []string{"./handbook"})
//	res, err := docs.Search(ctx, "how long do refunds take")
//	ans, err := docs.Ask(ctx, "How long do refunds take?")
//
// It is also the operations layer the command line, the HTTP server and
// the MCP server share: KB.Search, KB.Ask, KB.AskStream, KB.Delete,
// KB.AddDocuments and KB.Status take the caller's Scope, and each decision
// (the default mode, the model and post-processor specs, the filter checks,
// the scope merge, the passage each surface returns) is made here once.
// A surface parses its input, calls one of them and formats the result.
package quarry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	embedspec "github.com/quarry-rag/quarry/embed/spec"
	"github.com/quarry-rag/quarry/llm"
	llmspec "github.com/quarry-rag/quarry/llm/spec"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/rerank/spec"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/retrieve/azuresearch"
	"github.com/quarry-rag/quarry/retrieve/neo4j"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/chroma"      // chroma:// stores
	_ "github.com/quarry-rag/quarry/store/embedded"    // the default store
	_ "github.com/quarry-rag/quarry/store/mariadb"     // mariadb:// stores
	_ "github.com/quarry-rag/quarry/store/meilisearch" // meilisearch:// stores
	_ "github.com/quarry-rag/quarry/store/memory"      // memory: stores
	_ "github.com/quarry-rag/quarry/store/mongodb"     // mongodb:// and mongodb+srv:// stores
	_ "github.com/quarry-rag/quarry/store/opensearch"  // opensearch:// stores
	_ "github.com/quarry-rag/quarry/store/pinecone"    // pinecone:// stores
	_ "github.com/quarry-rag/quarry/store/postgres"    // postgres:// stores
	_ "github.com/quarry-rag/quarry/store/qdrant"      // qdrant:// stores
	_ "github.com/quarry-rag/quarry/store/typesense"   // typesense:// stores
	_ "github.com/quarry-rag/quarry/store/weaviate"    // weaviate:// stores
)

// ErrNoKB is returned by Open when no knowledge base is found and Create
// was not given.
var ErrNoKB = errors.New("no knowledge base here: run `quarry ingest PATH` (or `quarry init`) to create ./.quarry, or pass --kb DIR")

// ErrInvalid marks a request that is wrong as sent (a bad mode, spec,
// top-k or option): the caller must change it. It is store's
// ErrInvalidRequest, so a check made by a store reads the same.
var ErrInvalid = store.ErrInvalidRequest

// ErrForbidden marks an operation the caller's Scope does not allow.
var ErrForbidden = errors.New("forbidden")

// invalid wraps err as ErrInvalid unless it already says what it is.
func invalid(err error) error {
	if err == nil || errors.Is(err, ErrInvalid) {
		return err
	}
	return invalidError{err}
}

// invalidError is ErrInvalid with its own message: people read what is
// wrong, programs test errors.Is(err, ErrInvalid).
type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Unwrap() error        { return e.err }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// KB is an open knowledge base: its settings, store, embedder and chat
// model. It is safe for concurrent use; Close releases the store.
type KB struct {
	dir   string
	cfg   config.Config
	store *store.Store
	emb   embed.Embedder
	// ocr reads scanned PDF pages for ingestion (ingest.ocr); nil for none.
	ocr load.OCR
	// chat is opened from chatSpec on first use, so commands that answer
	// nothing never need a model's key.
	chatSpec string
	chatOnce sync.Once
	chat     llm.ChatModel
	chatErr  error
	// chatGiven is set when an option chose the chat model: it then
	// stands for the profiles' models too.
	chatGiven bool
	// post and transforms are the operator's post-processors and query
	// transforms, applied to every answer (specs in rerank/spec and
	// retrieve.NewTransform); web is a SearXNG address searched beside
	// the knowledge base.
	post       []string
	transforms []string
	web        retrieve.Retriever
	// graph is the knowledge graph, graphSearch its template searched with
	// every question ("" for none).
	graph       *neo4j.Graph
	graphSearch string
	// azure is the Azure AI Search index searched beside the knowledge
	// base, nil when none.
	azure         *azuresearch.Index
	sourceTimeout time.Duration
	log           *slog.Logger
	hooks         Hooks
	ownStore      bool

	loaderOnce sync.Once
	loader     *load.Loader
	// untrusted reads the files callers upload (load.Options.Untrusted).
	untrustedOnce sync.Once
	untrusted     *load.Loader

	// profiles are the agent profiles by name; profileChat holds their
	// chat models, opened on first use, one per spec.
	profiles    map[string]*Profile
	profileMu   sync.Mutex
	profileChat map[string]llm.ChatModel
	// callers bounds each caller's concurrent store work (hold).
	callers callerSlots
	// importing is held by the background import running (StartImport):
	// one at a time, since each holds its whole file in memory.
	importing sync.Mutex
}

// Hooks observe the stages of every operation ("embed", "search",
// "retrieve", "generate"): Stage starts one and returns the context to run
// it in and the function that ends it with its error. Observing through a
// hook, rather than by wrapping the retriever or the model, keeps their
// optional capabilities (neighbour lookup, query embedding) in view.
type Hooks struct {
	Stage func(ctx context.Context, name string) (context.Context, func(error))
}

type hooksKey struct{}

// Observe returns a context whose operations report their stages to h as
// well as to the knowledge base's own hooks: a server observes its
// requests this way.
func Observe(ctx context.Context, h Hooks) context.Context {
	return context.WithValue(ctx, hooksKey{}, h)
}

// stage starts a stage under the context's hooks and then the knowledge
// base's.
func (kb *KB) stage(ctx context.Context, name string) (context.Context, func(error)) {
	caller := hooksFrom(ctx)
	if kb.hooks.Stage == nil && caller.Stage == nil {
		return ctx, func(error) {} // nothing observes: the common case costs nothing
	}
	var ends []func(error)
	for _, h := range []Hooks{kb.hooks, caller} {
		if h.Stage != nil {
			var end func(error)
			ctx, end = h.Stage(ctx, name)
			ends = append(ends, end)
		}
	}
	return ctx, func(err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](err)
		}
	}
}

func hooksFrom(ctx context.Context) Hooks {
	h, _ := ctx.Value(hooksKey{}).(Hooks)
	return h
}

// Option configures Open and New.
type Option func(*options)

type options struct {
	create        bool
	storeURL      string
	collection    string
	emb           embed.Embedder
	embSpec       *string
	chat          llm.ChatModel
	chatSpec      *string
	chatSet       bool
	post          []string
	transforms    []string
	web           string
	sourceTimeout time.Duration
	mode          *string
	ocr           *string
	topK          int
	log           *slog.Logger
	hooks         Hooks
	environ       func() []string
	profiles      []Profile
	graph         *neo4j.Graph
	graphSearch   *string
	azure         *azuresearch.Index
}

// getenv looks a variable up in the options' environment (nil: the
// process's).
func (o *options) getenv() func(string) string {
	if o.environ == nil {
		return nil
	}
	return func(key string) string {
		for _, kv := range o.environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && k == key {
				return v
			}
		}
		return ""
	}
}

// Create makes Open create the knowledge base when it is missing: the
// target directory, or ./.quarry when the target is empty.
func Create() Option { return func(o *options) { o.create = true } }

// WithStore opens this store URL (embedded:DIR, postgres://…, memory:)
// instead of the configured one.
func WithStore(url string) Option { return func(o *options) { o.storeURL = url } }

// WithCollection sets the collection used when a call names none
// (instead of the configured one, "default").
func WithCollection(name string) Option { return func(o *options) { o.collection = name } }

// WithEmbedder uses e instead of the configured embedder.
func WithEmbedder(e embed.Embedder) Option { return func(o *options) { o.emb = e } }

// WithEmbedderSpec uses the embedder spec names (embed/spec's syntax:
// hash, static:DIR, openai:MODEL, …) instead of the configured one.
func WithEmbedderSpec(s string) Option { return func(o *options) { o.embSpec = &s } }

// WithChatModel writes answers with m; nil answers extractively.
func WithChatModel(m llm.ChatModel) Option {
	return func(o *options) { o.chat, o.chatSet = m, true }
}

// WithChatModelSpec writes answers with the model s names (provider:model,
// llm/spec); empty keeps the configured llm setting.
func WithChatModelSpec(s string) Option {
	return func(o *options) {
		if strings.TrimSpace(s) != "" {
			o.chatSpec = &s
		}
	}
}

// WithPost applies these post-processors to every answer (rerank/spec:
// dedupe, mmr, threshold, adaptive, neighbours, pack, rerank=…), before a
// request's own.
func WithPost(specs ...string) Option { return func(o *options) { o.post = append(o.post, specs...) } }

// WithTransforms applies these query transforms to every answer (rewrite,
// hyde, decompose, multi-query); they need a chat model.
func WithTransforms(names ...string) Option {
	return func(o *options) { o.transforms = append(o.transforms, names...) }
}

// WithWeb also searches the web for every answer, in parallel with the
// knowledge base (and as an agent's fallback source): spec is a SearXNG
// instance's URL, "brave" or "tavily" (retrieve.NewWeb; "+pages" reads the
// top results' pages through the reader of untrusted files). Each source
// may take timeout (retrieve.DefaultSourceTimeout when 0).
func WithWeb(spec string, timeout time.Duration) Option {
	return func(o *options) { o.web, o.sourceTimeout = spec, timeout }
}

// WithMode sets the search mode used when a call names none, instead of
// the configured search.mode.
func WithMode(mode string) Option { return func(o *options) { o.mode = &mode } }

// WithOCR sets how ingestion reads scanned PDF pages — off, auto (with
// tesseract when it is installed) or on — instead of the configured
// ingest.ocr.
func WithOCR(mode string) Option { return func(o *options) { o.ocr = &mode } }

// WithTopK sets the number of results when a call names none, instead of
// the configured search.top_k.
func WithTopK(k int) Option { return func(o *options) { o.topK = k } }

// WithProfiles adds agent profiles to the ones config.toml defines; a
// profile of the same name stands for the file's.
func WithProfiles(ps ...Profile) Option {
	return func(o *options) { o.profiles = append(o.profiles, ps...) }
}

// WithLogger sends the knowledge base's records to l (slog.Default()
// otherwise).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithHooks observes every operation's stages.
func WithHooks(h Hooks) Option { return func(o *options) { o.hooks = h } }

// WithEnviron reads settings from this environment instead of the
// process's (tests).
func WithEnviron(environ func() []string) Option { return func(o *options) { o.environ = environ } }

// Open opens the knowledge base target names: a directory (the embedded
// store in it and its config.toml), a store URL (embedded:DIR,
// postgres://…, memory:) or "" for the one found upward from the working
// directory, like .git. Settings resolve option > environment (QUARRY_*) >
// config.toml > defaults. The embedder is opened here, once.
func Open(ctx context.Context, target string, opts ...Option) (*KB, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	dir, storeURL := target, ""
	if isStoreURL(target) {
		dir, storeURL = "", target
		if d, ok := strings.CutPrefix(target, "embedded:"); ok {
			dir = d
		}
	}
	if target == "" {
		found := false
		var err error
		if dir, found, err = config.FindKB(".", o.getenv()); err != nil {
			return nil, err
		}
		if !found && !o.create {
			return nil, ErrNoKB
		}
	} else if dir != "" && storeURL == "" {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			if !o.create {
				return nil, fmt.Errorf("%w (%s is not a knowledge base directory)", ErrNoKB, dir)
			}
		}
	}
	if dir != "" && o.create {
		if err := InitDir(dir, config.Defaults()); err != nil {
			return nil, err
		}
	}
	cfg := config.Defaults()
	if dir != "" || storeURL != "" {
		var err error
		if cfg, err = config.Load(dir, o.environ); err != nil {
			return nil, invalid(err)
		}
	}
	if storeURL != "" {
		cfg.Store = storeURL
	}
	if o.storeURL != "" {
		cfg.Store = o.storeURL
	}
	url := cfg.Store
	if url == "" {
		url = "embedded:" + dir
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	kb, err := build(ctx, s, dir, cfg, o)
	if err != nil {
		s.Close()
		return nil, err
	}
	kb.ownStore = true
	return kb, nil
}

// New serves an open store as a knowledge base with the default settings
// and the options; Close leaves the store open. Tests and programs that
// hold their store themselves use it.
func New(ctx context.Context, s *store.Store, opts ...Option) (*KB, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.emb == nil && o.embSpec == nil {
		def := config.Defaults().Embedder
		o.embSpec = &def
	}
	return build(ctx, s, "", config.Defaults(), o)
}

// isStoreURL reports whether target is a store URL rather than a
// directory.
func isStoreURL(target string) bool {
	return strings.Contains(target, "://") || strings.HasPrefix(target, "embedded:") || strings.HasPrefix(target, "memory:")
}

func build(ctx context.Context, s *store.Store, dir string, cfg config.Config, o options) (*KB, error) {
	if o.collection != "" {
		cfg.Collection = o.collection
	}
	if o.mode != nil {
		cfg.Search.Mode = *o.mode
	}
	if o.topK != 0 {
		cfg.Search.TopK = o.topK
	}
	if o.ocr != nil {
		cfg.Ingest.OCR = *o.ocr
	}
	ocr, err := load.NewOCR(cfg.Ingest.OCR)
	if err != nil {
		return nil, invalid(fmt.Errorf("ingest.ocr: %w", err))
	}
	if _, err := retrieve.ResolveMode(cfg.Search.Mode, "", embed.ModelInfo{}, false); err != nil {
		return nil, invalid(fmt.Errorf("search.mode: %w", err))
	}
	profiles, err := profilesFrom(cfg.Profiles)
	if err != nil {
		return nil, invalid(err)
	}
	for _, p := range o.profiles {
		if err := p.Check(); err != nil {
			return nil, invalid(err)
		}
		profiles[p.Name] = &p
	}
	kb := &KB{dir: dir, cfg: cfg, store: s, post: o.post, transforms: o.transforms,
		sourceTimeout: o.sourceTimeout, log: o.log, hooks: o.hooks, ocr: ocr, profiles: profiles}
	if kb.log == nil {
		kb.log = slog.Default()
	}
	if o.web != "" {
		web, err := retrieve.NewWeb(o.web, lazyReader{kb})
		if err != nil {
			return nil, invalid(err)
		}
		kb.web = web
	}
	kb.graph, kb.graphSearch = o.graph, cfg.Graph.Search
	if o.graphSearch != nil {
		kb.graphSearch = *o.graphSearch
	}
	if kb.graph == nil {
		if kb.graph, err = openGraph(dir, cfg.Graph); err != nil {
			return nil, invalid(err)
		}
	}
	if kb.azure = o.azure; kb.azure == nil {
		if kb.azure, err = openAzure(ctx, cfg.Azure); err != nil {
			return nil, invalid(err)
		}
	} else if err := kb.azure.Check(); err != nil {
		return nil, invalid(err)
	}
	switch {
	case o.emb != nil:
		kb.emb = o.emb
	default:
		setting := cfg.Embedder
		if o.embSpec != nil {
			setting = *o.embSpec
		}
		// An API model of unknown dimension costs one call to learn it;
		// the timeout bounds that call.
		ectx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		e, err := embedspec.Open(ectx, setting)
		if err != nil {
			return nil, invalid(fmt.Errorf("embedder: %w", err))
		}
		kb.emb = e
	}
	kb.chatSpec = cfg.LLM
	kb.chatGiven = o.chatSpec != nil || o.chatSet
	switch {
	case o.chatSpec != nil:
		kb.chatSpec = *o.chatSpec
	case o.chatSet:
		kb.chatSpec = "" // the model given stands for the setting
		kb.chatOnce.Do(func() { kb.chat = o.chat })
	}
	// With post-processors or transforms the operator's specs are checked
	// now, against a pipeline like the ones answers get, so a typo fails at
	// start rather than per request.
	if len(kb.post) > 0 || len(kb.transforms) > 0 || kb.reranks() || kb.profilesPost() {
		if err := kb.CheckAnswers(); err != nil {
			return nil, err
		}
	}
	return kb, nil
}

// InitOptions are what Init sets up beyond the Options of Open.
type InitOptions struct {
	// Embedder is the embedder spec written to a new config.toml and used
	// for new collections (embed/spec; "" is the default); it is opened
	// once to check it.
	Embedder string
	// Schema declares the collection's metadata fields: a new collection
	// gets it, an existing one takes a compatible change or refuses.
	Schema *document.Schema
}

// Init creates a knowledge base in dir ("" finds ./.quarry upward, else
// makes it here) with its config.toml, kept when it exists, and its
// collection (WithCollection names it), and returns it open.
func Init(ctx context.Context, dir string, init InitOptions, opts ...Option) (*KB, error) {
	if dir == "" {
		var err error
		if dir, _, err = config.FindKB(".", nil); err != nil {
			return nil, err
		}
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg := config.Defaults()
	if init.Embedder != "" {
		octx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		_, err := embedspec.Open(octx, init.Embedder)
		cancel()
		if err != nil {
			return nil, invalid(err)
		}
		cfg.Embedder = init.Embedder
	}
	if o.collection != "" {
		cfg.Collection = o.collection
	}
	if err := InitDir(dir, cfg); err != nil {
		return nil, err
	}
	kb, err := Open(ctx, dir, opts...)
	if err != nil {
		return nil, err
	}
	if init.Schema != nil {
		_, err = kb.EnsureCollection(ctx, "", init.Schema)
	}
	var c *store.Collection
	if err == nil {
		c, err = kb.StoreCollection(ctx, "", true)
	}
	if err == nil {
		err = kb.CheckModel(c)
	}
	if err != nil {
		kb.Close()
		return nil, err
	}
	return kb, nil
}

// InitDir creates a knowledge base directory with its config.toml (cfg
// as the template's values), keeping a config.toml that exists.
func InitDir(dir string, cfg config.Config) error {
	if err := os.MkdirAll(filepath.Join(dir, "cache"), 0o755); err != nil {
		return fmt.Errorf("create knowledge base: %w", err)
	}
	path := filepath.Join(dir, config.FileName)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.WriteFile(path, []byte(config.Template(cfg)), 0o644); err != nil {
		return fmt.Errorf("create knowledge base: %w", err)
	}
	return nil
}

// Close stops the document readers and closes the store Open opened.
func (kb *KB) Close() error {
	var err error
	if kb.loader != nil {
		err = kb.loader.Close()
	}
	if kb.untrusted != nil {
		err = errors.Join(err, kb.untrusted.Close())
	}
	if kb.ownStore {
		err = errors.Join(err, kb.store.Close())
	}
	return err
}

// Dir is the knowledge base's directory; "" for a store without one.
func (kb *KB) Dir() string { return kb.dir }

// Config is the resolved settings.
func (kb *KB) Config() config.Config { return kb.cfg }

// Store is the knowledge base's store.
func (kb *KB) Store() *store.Store { return kb.store }

// Embedder embeds queries and documents.
func (kb *KB) Embedder() embed.Embedder { return kb.emb }

// ChatModel is the model that writes answers, opened on first use; nil
// when answers are extractive.
func (kb *KB) ChatModel() (llm.ChatModel, error) {
	kb.chatOnce.Do(func() {
		kb.chat, kb.chatErr = llmspec.Open(kb.chatSpec)
		if kb.chatErr != nil {
			kb.chatErr = invalid(fmt.Errorf("llm: %w", kb.chatErr))
		}
	})
	return kb.chat, kb.chatErr
}

// hasChat reports whether answers are written by a chat model, without
// opening one: reporting it must not need the model's key.
func (kb *KB) hasChat() bool {
	if strings.TrimSpace(kb.chatSpec) != "" {
		return true
	}
	m, _ := kb.ChatModel() // set by WithChatModel, or an empty spec: opens nothing
	return m != nil
}

// rerankFor is the reranker the settings give a collection: its own
// (collections.NAME.rerank), else search.rerank; "" for none.
func (kb *KB) rerankFor(collection string) string {
	r := kb.cfg.Search.Rerank
	if cs, ok := kb.cfg.Collections[collection]; ok && cs.Rerank != "" {
		r = cs.Rerank
	}
	if strings.EqualFold(r, "off") {
		return ""
	}
	return r
}

// reranks reports whether a setting reranks some collection's answers.
func (kb *KB) reranks() bool {
	if kb.rerankFor(kb.cfg.Collection) != "" {
		return true
	}
	for name := range kb.cfg.Collections {
		if kb.rerankFor(name) != "" {
			return true
		}
	}
	return false
}

// postFor is the operator's post-processing of a collection's answers:
// the configured reranker first, then WithPost's; a rerank WithPost names
// stands for the setting.
func (kb *KB) postFor(collection string) []string {
	r := kb.rerankFor(collection)
	if r == "" || slices.ContainsFunc(kb.post, func(p string) bool { return strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "rerank") }) {
		return kb.post
	}
	return append([]string{"rerank=" + r}, kb.post...)
}

// CheckAnswers opens the chat model and checks the knowledge base's own
// post-processors and transforms, as a server does before it serves its
// first answer.
func (kb *KB) CheckAnswers() error {
	chat, err := kb.ChatModel()
	if err != nil {
		return err
	}
	probe := &retrieve.Collection{Embedder: kb.emb}
	names := []string{kb.cfg.Collection}
	for name := range kb.cfg.Collections {
		names = append(names, name)
	}
	for _, name := range names {
		if _, err := spec.Post(kb.postFor(name), spec.Env{Retriever: probe, Model: chat, Embedder: kb.emb, AllowEndpoints: true}); err != nil {
			return invalid(err)
		}
	}
	for _, t := range kb.transforms {
		if _, err := retrieve.NewTransform(t, chat); err != nil {
			return invalid(err)
		}
	}
	return kb.checkProfiles(spec.Env{Retriever: probe, Model: chat, Embedder: kb.emb, AllowEndpoints: true})
}

// Uncollected is the collection of documents without a collection of their
// own (store.Uncollected): a knowledge base whose collection setting is
// Uncollected keeps what callers add without naming a collection apart
// from every named one, and a call naming none reads only those. No
// collection can be created under its name, and a scope limited to named
// collections does not reach it.
const Uncollected = store.Uncollected

// DefaultCollection is the collection a call naming none uses.
func (kb *KB) DefaultCollection() string { return kb.cfg.Collection }

// TopK is the number of results a call naming none gets.
func (kb *KB) TopK() int { return kb.cfg.Search.TopK }

// Loader is the knowledge base's document loader, created on first use
// with the compiled PDF engine kept in the knowledge base's cache/.
func (kb *KB) Loader() *load.Loader {
	kb.loaderOnce.Do(func() { kb.loader = kb.newLoader(false) })
	return kb.loader
}

// lazyReader reads fetched web pages with the reader of untrusted files,
// opened on first use.
type lazyReader struct{ kb *KB }

func (r lazyReader) ReadBytes(ctx context.Context, name string, data []byte) ([]*document.Document, error) {
	return r.kb.untrustedLoader().ReadBytes(ctx, name, data)
}

// untrustedLoader reads uploaded files: with the PDF engine a done
// context stops mid-page, since a file a caller sends may be made to
// hang it; the operator's own files get the faster one.
func (kb *KB) untrustedLoader() *load.Loader {
	kb.untrustedOnce.Do(func() { kb.untrusted = kb.newLoader(true) })
	return kb.untrusted
}

func (kb *KB) newLoader(untrusted bool) *load.Loader {
	return load.New(load.Options{MaxFileSize: kb.cfg.Ingest.MaxFileSize, CacheDir: kb.CacheDir(), OCR: kb.ocr, Untrusted: untrusted, KeepData: kb.cfg.Ingest.KeepData,
		SkipFolders: kb.cfg.Ingest.SkipFolders})
}

// Collection is a collection bound to its knowledge base's embedder and
// settings. Its methods act with the Developer scope.
type Collection struct {
	kb   *KB
	name string
}

// Collection is the collection name names ("" for the default). Nothing is
// read yet: a missing collection is an error at its first search, and is
// created by its first ingestion.
func (kb *KB) Collection(name string) *Collection {
	return &Collection{kb: kb, name: kb.name(name)}
}

// EnsureCollection creates a collection with schema (nil for none) when
// it is missing. A schema given for an existing collection must be the
// one it has (store.ErrSchemaMismatch otherwise), and its embedder must be
// the knowledge base's.
func (kb *KB) EnsureCollection(ctx context.Context, name string, schema *document.Schema) (*Collection, error) {
	c, err := kb.ensure(ctx, name, schema)
	if err != nil {
		return nil, err
	}
	return &Collection{kb: kb, name: c.Name()}, nil
}

// Name is the collection's name.
func (c *Collection) Name() string { return c.name }

// Store opens the collection in its store; it must exist.
func (c *Collection) Store(ctx context.Context) (*store.Collection, error) {
	return c.kb.open(ctx, c.name, false)
}

// KB is the knowledge base the collection belongs to.
func (c *Collection) KB() *KB { return c.kb }

func (kb *KB) name(name string) string {
	if name == "" {
		return kb.cfg.Collection
	}
	return name
}

// StoreCollection opens a collection in the store ("" for the default);
// with create, a missing one is created with the knowledge base's
// embedder, and an existing one must have been built with it. Commands
// that work on the store itself (eval, migrate, the hierarchy) use it.
func (kb *KB) StoreCollection(ctx context.Context, name string, create bool) (*store.Collection, error) {
	return kb.open(ctx, name, create)
}

// open opens a collection by name; with create, a missing one is created
// with the knowledge base's embedder.
func (kb *KB) open(ctx context.Context, name string, create bool) (*store.Collection, error) {
	if create {
		return kb.ensure(ctx, name, nil)
	}
	name = kb.name(name)
	c, err := kb.store.Collection(ctx, name)
	if errors.Is(err, store.ErrCollectionNotFound) {
		return nil, fmt.Errorf("%w: collection %q does not exist yet: ingest something into it first", store.ErrCollectionNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", name, err)
	}
	return c, nil
}

func (kb *KB) ensure(ctx context.Context, name string, schema *document.Schema) (*store.Collection, error) {
	name = kb.name(name)
	c, err := kb.store.Collection(ctx, name)
	// A schema given for an existing collection must be the one it has
	// (store.ErrSchemaMismatch otherwise): it is never silently ignored.
	if errors.Is(err, store.ErrCollectionNotFound) || (err == nil && schema != nil) {
		// Ensure, not create: another caller may create it meanwhile.
		c, err = kb.store.EnsureCollection(ctx, store.CollectionConfig{Name: name, Schema: schema, Model: kb.emb.Model()})
	}
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", name, err)
	}
	if err := kb.CheckModel(c); err != nil {
		return nil, err
	}
	return c, nil
}

// CheckModel refuses a collection built with another embedder: its
// vectors could not be compared with this one's.
func (kb *KB) CheckModel(c *store.Collection) error {
	if m := c.Config().Model; m != kb.emb.Model() {
		where := "the embedder setting"
		switch o := kb.cfg.Origin("embedder"); {
		case strings.HasPrefix(o, "QUARRY_"):
			where = "the environment variable " + o
		case o != "":
			where = "embedder in " + o
		}
		return fmt.Errorf("%w: collection %q was built with %s but this knowledge base embeds with %s: set %s back, or ingest into a new collection",
			store.ErrModelMismatch, c.Name(), m, kb.emb.Model(), where)
	}
	return nil
}

// pipeline fills the parts of an answer pipeline every answer shares.
func (kb *KB) pipeline(retr *retrieve.Collection, chat llm.ChatModel) *rag.Pipeline {
	return &rag.Pipeline{
		Retriever:    retr,
		Model:        chat,
		TopK:         kb.cfg.Search.TopK,
		Extractive:   rag.Extractive{Embedder: kb.emb},
		MinRelevance: kb.minRelevance(),
		Logger:       kb.log,
		Stage:        kb.stage,
	}
}

// minRelevance is the answers' relevance floor: search.min_relevance, or
// the rule for the embedder when it is 0; none when it is negative.
func (kb *KB) minRelevance() float64 {
	switch v := kb.cfg.Search.MinRelevance; {
	case v < 0:
		return 0
	case v > 0:
		return v
	}
	return rag.MinRelevanceFor(kb.emb.Model())
}

// StoreURL is the store's address with any password hidden, for people
// to read: the configured URL, else embedded:DIR.
func (kb *KB) StoreURL() string {
	u := kb.cfg.Store
	if u == "" {
		return "embedded:" + kb.dir
	}
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	if _, ok := p.User.Password(); ok {
		p.User = url.UserPassword(p.User.Username(), "xxxxx")
	}
	return p.String()
}

// DiskBytes is the size of the knowledge base's directory: its embedded
// store, cache and settings (0 without a directory).
func (kb *KB) DiskBytes() int64 {
	if kb.dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(kb.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
