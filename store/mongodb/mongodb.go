// Package mongodb is Quarry's store on MongoDB Atlas, through the official
// Go driver (go.mongodb.org/mongo-driver/v2): Atlas Vector Search for
// vectors, Atlas Search for keywords, and $rankFusion for hybrid search
// where asked for.
//
// Each Quarry collection is a MongoDB collection of its own
// (PREFIX_NAME, "quarry_handbook") in the URL's database, "quarry" by
// default, holding a document per chunk:
//
//   - _id: the chunk id;
//   - q_doc: the document as JSON (so metadata comes back with its
//     integers and floats apart, and content as written);
//   - q_emb: the embedding, as doubles (each float32 exactly);
//   - q_terms: Quarry's own analyzer's terms (the embedded store's:
//     stemmed, without stop words), separated by spaces, which the search
//     index reads with Lucene's whitespace analyzer, so Atlas Search
//     matches Quarry's terms and scores them with Lucene's BM25;
//   - q_stype, q_sname, q_src: the source, and m_NAME for each filterable
//     schema field, as MongoDB values.
//
// Two search indexes come with the collection: "quarry_vector" (type
// vectorSearch: q_emb under cosine similarity, and the source and
// filterable fields as filter fields) and "quarry_text" (type search,
// dynamic mapping off: q_terms, and the filterable fields as token,
// number or boolean). Quarry waits for both to be queryable. Collection
// configurations, source states and settings, and conversation threads
// are documents in PREFIX-collections, PREFIX-sources and PREFIX-threads.
//
// Every batch is one transaction (Atlas clusters are replica sets), so an
// upsert, a delete or a source replacement applies whole or not at all;
// the driver retries a transaction a write conflict aborts. Atlas's
// search indexes follow the collection through its change stream, so a
// write can take a moment to show in searches; reads by id, counts and
// listings see it at once.
//
// Importing the package registers the "mongodb://" and "mongodb+srv://"
// URL schemes: a MongoDB connection string, whose path names the database,
// with Quarry's own parameters prefix= and hybrid=mongodb taken out before
// the rest goes to the driver.
//
// Quarry has not run this package against MongoDB Atlas: its tests run the
// official driver against mongotest, a fake deployment speaking MongoDB's
// wire protocol, which checks every aggregation stage, query operator and
// Atlas Search operator Quarry sends against MongoDB's published MQL
// specifications (kept in mongotest).
package mongodb

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/quarry-rag/quarry/index/bm25"
	"github.com/quarry-rag/quarry/store"
)

func init() {
	store.Register("mongodb", driver{})
	store.Register("mongodb+srv", driver{})
}

type driver struct{}

func (driver) Open(ctx context.Context, url string) (store.Backend, error) { return Open(ctx, url) }

// Dialect is the tag raw filter fragments for this store carry: a JSON
// object holding an MQL query over the fields above, used by vector
// search, counts and deletes. Keyword search, whose Atlas Search filter
// language differs, refuses a raw fragment.
const Dialect = "mongodb"

// Field names Quarry keeps for itself.
const (
	fDoc   = "q_doc"
	fEmb   = "q_emb"
	fTerms = "q_terms"
	fSType = "q_stype"
	fSName = "q_sname"
	fSrc   = "q_src"
)

// Search index names.
const (
	vectorIndex = "quarry_vector"
	textIndex   = "quarry_text"
)

// Backend is the MongoDB store.Backend.
type Backend struct {
	client *mongo.Client
	db     *mongo.Database
	prefix string
	native bool // hybrid=mongodb: $rankFusion merges

	mu    sync.Mutex
	colls map[string]*collection // by Quarry name, as last read
	anz   map[string]*bm25.Analyzer
	order store.TurnOrder
}

// prefixRE is a prefix: no "_" or "-", which end it in collection names,
// so one prefix's collections never look like another's.
var prefixRE = regexp.MustCompile(`\A[a-z0-9]{1,24}\z`)

// dbRE is a database name MongoDB accepts.
var dbRE = regexp.MustCompile(`\A[A-Za-z0-9_-]{1,63}\z`)

// Open reads a MongoDB connection string, connects and checks the
// deployment answers.
func Open(ctx context.Context, raw string) (*Backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("mongodb: %w", err)
	}
	if u.Scheme != "mongodb" && u.Scheme != "mongodb+srv" {
		return nil, fmt.Errorf("mongodb: URL %q: want mongodb:// or mongodb+srv://", u.Redacted())
	}
	q := u.Query()
	b := &Backend{prefix: "quarry", colls: map[string]*collection{}, anz: map[string]*bm25.Analyzer{}}
	if p := q.Get("prefix"); p != "" {
		if !prefixRE.MatchString(p) {
			return nil, fmt.Errorf("mongodb: prefix %q must be 1-24 lowercase letters or digits", p)
		}
		b.prefix = p
	}
	switch h := q.Get("hybrid"); h {
	case "", "quarry":
	case "mongodb":
		b.native = true
	default:
		return nil, fmt.Errorf("mongodb: hybrid=%q: want quarry (the default) or mongodb", h)
	}
	q.Del("prefix")
	q.Del("hybrid")
	u.RawQuery = q.Encode()
	dbName := strings.Trim(u.Path, "/")
	if dbName == "" {
		dbName = "quarry"
	}
	if !dbRE.MatchString(dbName) {
		return nil, fmt.Errorf("mongodb: database %q: want letters, digits, '_' or '-'", dbName)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(u.String()).SetTimeout(2 * time.Minute))
	if err != nil {
		return nil, fmt.Errorf("mongodb: connect: %w", err)
	}
	b.client, b.db = client, client.Database(dbName)
	if err := client.Ping(ctx, nil); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("mongodb: %s: %w", u.Redacted(), err)
	}
	return b, nil
}

// Dialect implements store.Backend.
func (b *Backend) Dialect() string { return Dialect }

// Close implements store.Backend.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.client.Disconnect(ctx); err != nil {
		return fmt.Errorf("mongodb: disconnect: %w", err)
	}
	return nil
}

// Describe implements store.Describer: the server's version.
func (b *Backend) Describe(ctx context.Context) (store.Engine, error) {
	var info struct {
		Version string `bson:"version"`
	}
	if err := b.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return store.Engine{}, fmt.Errorf("mongodb: buildInfo: %w", err)
	}
	return store.Engine{Name: "mongodb", Version: info.Version}, nil
}

// Sidecar collections.
func (b *Backend) configs() *mongo.Collection { return b.db.Collection(b.prefix + "-collections") }
func (b *Backend) sources() *mongo.Collection { return b.db.Collection(b.prefix + "-sources") }
func (b *Backend) threads() *mongo.Collection { return b.db.Collection(b.prefix + "-threads") }

// chunks is a Quarry collection's MongoDB collection.
func (b *Backend) chunks(name string) *mongo.Collection {
	return b.db.Collection(b.prefix + "_" + name)
}

// inTxn runs fn in a transaction, which the driver retries while a write
// conflict aborts it.
func (b *Backend) inTxn(ctx context.Context, fn func(ctx context.Context) error) error {
	sess, err := b.client.StartSession()
	if err != nil {
		return fmt.Errorf("mongodb: session: %w", err)
	}
	defer sess.EndSession(context.WithoutCancel(ctx))
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) { return nil, fn(ctx) })
	return err
}

func isDuplicate(err error) bool { return mongo.IsDuplicateKeyError(err) }
