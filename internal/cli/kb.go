package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/config"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/spec"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
	"github.com/quarry-rag/quarry/store"
	_ "github.com/quarry-rag/quarry/store/embedded" // the default store
	_ "github.com/quarry-rag/quarry/store/postgres" // postgres:// stores
)

// kbFlags are the flags every knowledge-base command shares.
type kbFlags struct {
	kb         string
	collection string
	store      string
}

func (f *kbFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kb, "kb", "", "knowledge base directory (default: ./.quarry, found upward like .git; or $QUARRY_KB)")
	cmd.Flags().StringVarP(&f.collection, "collection", "c", "", "collection (default: the configured one, \"default\")")
	cmd.Flags().StringVar(&f.store, "store", "", "store URL, overriding the configured one (embedded:DIR, postgres://…)")
}

// kb is an open knowledge base: its settings, store and embedder.
type kb struct {
	dir      string
	cfg      config.Config
	store    *store.Store
	embedder embed.Embedder
	loader   *load.Loader // created on first ingestion
}

// errNoKB tells people how to start.
var errNoKB = errors.New("no knowledge base here: run `quarry ingest PATH` (or `quarry init`) to create ./.quarry, or pass --kb DIR")

// openKB resolves, loads and opens the knowledge base. With create, a
// missing knowledge base is created in ./.quarry (the first writing command
// does that); without it, a missing one is an error.
func openKB(ctx context.Context, f *kbFlags, create bool) (*kb, error) {
	dir := f.kb
	found := false
	if dir != "" {
		st, err := os.Stat(dir)
		found = err == nil && st.IsDir()
	} else {
		var err error
		if dir, found, err = config.FindKB(".", nil); err != nil {
			return nil, err
		}
	}
	if !found && !create {
		return nil, errNoKB
	}
	if !found {
		if err := initKB(dir, config.Defaults()); err != nil {
			return nil, err
		}
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		return nil, usageErr(err)
	}
	if f.collection != "" {
		cfg.Collection = f.collection
	}
	if f.store != "" {
		cfg.Store = f.store
	}
	emb, err := newEmbedder(cfg.Embedder)
	if err != nil {
		return nil, usageErr(err)
	}
	url := cfg.Store
	if url == "" {
		url = "embedded:" + dir
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return &kb{dir: dir, cfg: cfg, store: s, embedder: emb}, nil
}

// initKB creates a knowledge base directory with its config.toml.
func initKB(dir string, cfg config.Config) error {
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

func (k *kb) Close() error {
	var err error
	if k.loader != nil {
		err = k.loader.Close()
	}
	return errors.Join(err, k.store.Close())
}

// collection opens the configured collection; with ensure it is created
// when missing.
func (k *kb) collection(ctx context.Context, ensure bool, schema *document.Schema) (*store.Collection, error) {
	if !ensure {
		c, err := k.store.Collection(ctx, k.cfg.Collection)
		if errors.Is(err, store.ErrCollectionNotFound) {
			return nil, fmt.Errorf("collection %q does not exist yet: ingest something into it first", k.cfg.Collection)
		}
		if err != nil {
			return nil, err
		}
		if c.Config().Model != k.embedder.Model() {
			return nil, fmt.Errorf("%w: collection %q was built with %s but the configured embedder is %s: set embedder in %s back, or re-ingest into a new collection",
				store.ErrModelMismatch, c.Name(), c.Config().Model, k.embedder.Model(), filepath.Join(k.dir, config.FileName))
		}
		return c, nil
	}
	c, err := k.store.Collection(ctx, k.cfg.Collection)
	if errors.Is(err, store.ErrCollectionNotFound) {
		return k.store.EnsureCollection(ctx, store.CollectionConfig{Name: k.cfg.Collection, Schema: schema, Model: k.embedder.Model()})
	}
	if err != nil {
		return nil, err
	}
	if c.Config().Model != k.embedder.Model() {
		return nil, fmt.Errorf("%w: collection %q was built with %s but the configured embedder is %s: re-ingest into a new collection (--collection) or set the embedder back",
			store.ErrModelMismatch, c.Name(), c.Config().Model, k.embedder.Model())
	}
	return c, nil
}

// newEmbedder builds the embedder a setting names (syntax in package
// embed/spec). An API model of unknown dimension costs one call to learn
// it; the timeout bounds that call.
func newEmbedder(setting string) (embed.Embedder, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return spec.Open(ctx, setting)
}

// scratch points f at a new temporary knowledge base unless --kb was given,
// and returns the function that removes it.
func (f *kbFlags) scratch(prefix string) (func(), error) {
	if f.kb != "" {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	f.kb = dir
	return func() { os.RemoveAll(dir) }, nil
}

// modes resolves the configured search mode for searching and for
// answering: "auto" is DefaultMode of the embedder for search, AskMode for
// answers.
func (k *kb) modes() (search, ask store.Mode) {
	search, ask = store.Mode(k.cfg.Search.Mode), store.Mode(k.cfg.Search.Mode)
	if search == store.ModeAuto {
		search, ask = DefaultMode(k.embedder.Model()), AskMode
	}
	return search, ask
}

// chatModel builds the chat model spec names, else the llm setting's; none
// (extractive answers) when both are empty.
func (k *kb) chatModel(spec string) (llm.ChatModel, error) {
	if spec == "" {
		spec = k.cfg.LLM
	}
	m, err := newChatModel(spec)
	if err != nil {
		return nil, usageErr(err)
	}
	return m, nil
}

// ingestOptions are the settings every ingestion from the command line
// shares: the configured embedder, chunking, batch size and file limit,
// and the store's embedding cache when it has one. The loader keeps the
// compiled PDF engine in the knowledge base's cache/; Close stops it.
func (k *kb) ingestOptions(coll *store.Collection) ingest.Options {
	if k.loader == nil {
		k.loader = load.New(load.Options{MaxFileSize: k.cfg.Ingest.MaxFileSize, CacheDir: filepath.Join(k.dir, "cache")})
	}
	opt := ingest.Options{
		Collection: coll,
		Embedder:   k.embedder,
		Loader:     k.loader,
		Chunking:   split.RecursiveConfig{MaxTokens: k.cfg.Chunking.MaxTokens, OverlapTokens: k.cfg.Chunking.OverlapTokens, NoOverlap: k.cfg.Chunking.OverlapTokens == 0},
		BatchSize:  k.cfg.Ingest.BatchSize,
		// ingest.include/exclude hold on every surface; a run's own
		// patterns are added with Selection.Plus.
		Select: load.Selection{Include: k.cfg.Ingest.Include, Exclude: k.cfg.Ingest.Exclude},
	}
	opt.Finish = func(ctx context.Context, files []load.Entry, rep *ingest.Report) error {
		_, _, err := updateHierarchy(ctx, coll, files, rep)
		return err
	}
	// The offline hash embedder is cheaper than a cache lookup; a cache pays
	// for model and API embedders.
	if c, ok := k.store.Backend().(interface{ EmbeddingCache() embed.Cache }); ok && k.embedder.Model().Provider != "hash" {
		opt.Cache = c.EmbeddingCache()
	}
	return opt
}
