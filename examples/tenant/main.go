// Tenant answers each customer from their own documents only. The
// retriever it plugs into Quarry's answer pipeline searches under a
// mandatory scope (tenant = the customer), which nothing a question sends
// can widen: Quarry ANDs the scope into every search.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/retrieve"
)

// tenantRetriever retrieves from the knowledge base for one tenant.
type tenantRetriever struct {
	kb     *quarry.KB
	tenant string
}

// Retrieve implements retrieve.Retriever: the pipeline's scope and filter
// arrive in req and are kept, the tenant's scope is added on top.
func (r tenantRetriever) Retrieve(ctx context.Context, req retrieve.Request) ([]*document.Document, error) {
	scope := quarry.Scope{Filter: filter.Merge(filter.Eq("tenant", r.tenant), req.Scope), ReadOnly: true}
	res, err := r.kb.Search(ctx, scope, quarry.SearchRequest{Query: req.Query, Filter: req.Filter, TopK: req.TopK, Mode: "hybrid"})
	if err != nil {
		return nil, err
	}
	docs := make([]*document.Document, len(res.Results))
	for i, p := range res.Results {
		d := document.New(p.Text)
		d.ID, d.SourceName, d.Metadata = p.ID, p.Source, p.Metadata
		d.Provenance = document.Provenance{Page: p.Page, HeadingPath: p.Headings, LineStart: p.LineStart, LineEnd: p.LineEnd}
		d.SetScore(p.Score)
		docs[i] = d
	}
	return docs, nil
}

func run(ctx context.Context, kb *quarry.KB, tenant, question string) (*rag.Answer, error) {
	pipe := &rag.Pipeline{Retriever: tenantRetriever{kb: kb, tenant: tenant}}
	return pipe.Ask(ctx, rag.Request{Question: question})
}

func main() {
	ctx := context.Background()
	kb, err := quarry.Open(ctx, "memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer kb.Close()
	schema, err := document.NewSchema(document.Field{Name: "tenant", Type: document.TypeString, Required: true, Filterable: true})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := kb.EnsureCollection(ctx, "", schema); err != nil {
		log.Fatal(err)
	}
	if _, err := kb.Collection("").Add(ctx,
		quarry.NewDocument{Text: "Acme refunds are paid within five days.", Source: "acme/refunds.md", Metadata: map[string]any{"tenant": "acme"}},
		quarry.NewDocument{Text: "Globex refunds are paid within thirty days.", Source: "globex/refunds.md", Metadata: map[string]any{"tenant": "globex"}},
	); err != nil {
		log.Fatal(err)
	}
	for _, tenant := range []string{"acme", "globex"} {
		ans, err := run(ctx, kb, tenant, "When are refunds paid?")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s (%s)\n", tenant, ans.Text, ans.Citations[0].Source)
	}
}
