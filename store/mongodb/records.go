package mongodb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store"
)

// sourceKey names a source in q_src: its type and name, which cannot
// contain the separator.
func sourceKey(typ, name string) string { return typ + "\x1f" + name }

// chunkDoc makes a chunk's MongoDB document.
func (c *collection) chunkDoc(d *document.Document) (bson.D, error) {
	doc, err := store.EncodeDocument(d)
	if err != nil {
		return nil, err
	}
	out := bson.D{
		{Key: "_id", Value: d.ID},
		{Key: fDoc, Value: string(doc)},
		{Key: fEmb, Value: d.Embedding},
		{Key: fTerms, Value: c.terms(d)},
		{Key: fSType, Value: d.SourceType},
		{Key: fSName, Value: d.SourceName},
		{Key: fSrc, Value: sourceKey(d.SourceType, d.SourceName)},
	}
	if c.cfg.Schema != nil {
		for _, f := range c.cfg.Schema.Fields {
			v, ok := d.Metadata[f.Name]
			if !f.Filterable || !ok || v == nil {
				continue
			}
			sv, err := filter.Stored(f.Type, v)
			if err != nil {
				return nil, fmt.Errorf("document %s: field %s: %w", d.ID, f.Name, err)
			}
			out = append(out, bson.E{Key: metaField(f.Name), Value: sv})
		}
	}
	return out, nil
}

// terms is the text Atlas Search indexes: the title's and the text's
// terms and code pairs, Quarry's analyzer's, separated by spaces for the
// whitespace analyzer.
func (c *collection) terms(d *document.Document) string {
	terms, pairs := c.analyzer.AnalyzeDocument(d.Content, store.Code(d))
	if t := store.Title(d); t != "" {
		terms = append(c.analyzer.Analyze(t), terms...)
	}
	return strings.Join(append(terms, pairs...), " ")
}

// chunkRecord is a chunk document as Quarry reads it back.
type chunkRecord struct {
	ID    string    `bson:"_id"`
	Doc   string    `bson:"q_doc"`
	Emb   []float32 `bson:"q_emb"`
	Score float64   `bson:"score"`
}

func (r *chunkRecord) document(vectors bool) (*document.Document, error) {
	d, err := store.DecodeDocument([]byte(r.Doc))
	if err != nil {
		return nil, fmt.Errorf("mongodb: document %s: %w", r.ID, err)
	}
	if vectors {
		d.Embedding = r.Emb
	}
	return d, nil
}

// replaceModels are upserts of chunk documents by id.
func (c *collection) replaceModels(docs []*document.Document) ([]mongo.WriteModel, error) {
	models := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		cd, err := c.chunkDoc(d)
		if err != nil {
			return nil, err
		}
		models[i] = mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: d.ID}}).SetReplacement(cd).SetUpsert(true)
	}
	return models, nil
}

// Upsert implements store.Writer: one transaction.
func (b *Backend) Upsert(ctx context.Context, coll string, docs []*document.Document) error {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return err
	}
	models, err := c.replaceModels(docs)
	if err != nil || len(models) == 0 {
		return err
	}
	return b.inTxn(ctx, func(ctx context.Context) error {
		if _, err := c.coll.BulkWrite(ctx, models); err != nil {
			return fmt.Errorf("mongodb: upsert into %s: %w", coll, err)
		}
		return nil
	})
}

// query is the MQL query of a filter; false when it cannot match.
func (c *collection) query(f filter.Expr) (any, bool, error) {
	w, ok, err := c.visible(f)
	if w == nil {
		w = bson.D{}
	}
	return w, ok, err
}

// Delete implements store.Writer: in one transaction, the matching
// chunks' sources lose their states, so a later sync writes them again,
// and the chunks go.
func (b *Backend) Delete(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	q, ok, err := c.query(f)
	if err != nil || !ok {
		return 0, err
	}
	var n int
	err = b.inTxn(ctx, func(ctx context.Context) error {
		cur, err := c.coll.Find(ctx, q, options.Find().SetProjection(bson.D{{Key: fSrc, Value: 1}}))
		if err != nil {
			return fmt.Errorf("mongodb: delete from %s: %w", coll, err)
		}
		var srcs []struct {
			Src string `bson:"q_src"`
		}
		if err := cur.All(ctx, &srcs); err != nil {
			return fmt.Errorf("mongodb: delete from %s: %w", coll, err)
		}
		seen := map[string]bool{}
		var ids bson.A
		for _, s := range srcs {
			if !seen[s.Src] {
				seen[s.Src] = true
				ids = append(ids, stateID(coll, s.Src))
			}
		}
		if len(ids) > 0 {
			if _, err := b.sources().DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}); err != nil {
				return fmt.Errorf("mongodb: delete from %s: source states: %w", coll, err)
			}
		}
		res, err := c.coll.DeleteMany(ctx, q)
		if err != nil {
			return fmt.Errorf("mongodb: delete from %s: %w", coll, err)
		}
		n = int(res.DeletedCount)
		return nil
	})
	return n, err
}

// Get implements store.Searcher.
func (b *Backend) Get(ctx context.Context, coll string, ids []string) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	cur, err := c.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		options.Find().SetProjection(bson.D{{Key: fDoc, Value: 1}, {Key: fEmb, Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("mongodb: get from %s: %w", coll, err)
	}
	var recs []chunkRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, fmt.Errorf("mongodb: get from %s: %w", coll, err)
	}
	byID := make(map[string]*document.Document, len(recs))
	for i := range recs {
		d, err := recs[i].document(true)
		if err != nil {
			return nil, err
		}
		byID[recs[i].ID] = d
	}
	var out []*document.Document
	for _, id := range ids {
		if d := byID[id]; d != nil {
			out = append(out, d)
			delete(byID, id) // an id asked twice is returned once
		}
	}
	return out, nil
}

// Count implements store.Searcher.
func (b *Backend) Count(ctx context.Context, coll string, f filter.Expr) (int, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return 0, err
	}
	q, ok, err := c.query(f)
	if err != nil || !ok {
		return 0, err
	}
	n, err := c.coll.CountDocuments(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("mongodb: count %s: %w", coll, err)
	}
	return int(n), nil
}

// Scan implements store.Scanner: documents in id order, by the _id index.
func (b *Backend) Scan(ctx context.Context, coll string, after string, limit int) ([]*document.Document, error) {
	c, err := b.coll(ctx, coll)
	if err != nil {
		return nil, err
	}
	cur, err := c.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: after}}}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)).SetProjection(bson.D{{Key: fDoc, Value: 1}, {Key: fEmb, Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("mongodb: scan %s: %w", coll, err)
	}
	var recs []chunkRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, fmt.Errorf("mongodb: scan %s: %w", coll, err)
	}
	out := make([]*document.Document, 0, len(recs))
	for i := range recs {
		d, err := recs[i].document(true)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

var errNoDocs = mongo.ErrNoDocuments

func isNoDocs(err error) bool { return errors.Is(err, errNoDocs) }
