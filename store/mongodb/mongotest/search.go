package mongotest

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// searchIndex is an Atlas Search or Atlas Vector Search index.
type searchIndex struct {
	id, name, typ string
	def           bson.D
	// vectorSearch: the vector field and the filter fields.
	vectorPath string
	dims       int
	similarity string
	filters    map[string]bool
	// search: the mapped fields' types and analyzers.
	fields map[string]fieldMapping
}

type fieldMapping struct{ typ, analyzer, searchAnalyzer string }

var analyzers = map[string]bool{"lucene.whitespace": true, "lucene.keyword": true}

// createSearchIndexes checks and adds search indexes, ready at once.
func (s *Server) createSearchIndexes(ns string, cmd bson.D) bson.D {
	c := s.colls[ns]
	if c == nil {
		return fail(26, "NamespaceNotFound", "Collection "+ns+" does not exist")
	}
	var created bson.A
	for _, x := range arr(cmd, "indexes") {
		d, _ := x.(bson.D)
		ix, err := newSearchIndex(d)
		if err != nil {
			return s.note("search index definition", err)
		}
		if c.search[ix.name] != nil {
			return fail(68, "IndexAlreadyExists", "Index "+ix.name+" already exists")
		}
		s.next++
		ix.id = fmt.Sprintf("%024x", s.next)
		c.search[ix.name] = ix
		created = append(created, bson.D{{Key: "id", Value: ix.id}, {Key: "name", Value: ix.name}})
	}
	return ok(bson.E{Key: "indexesCreated", Value: created})
}

// newSearchIndex reads a definition as Atlas documents it.
func newSearchIndex(d bson.D) (*searchIndex, error) {
	ix := &searchIndex{name: str(d, "name"), typ: str(d, "type"), def: doc(d, "definition")}
	if ix.name == "" {
		ix.name = "default"
	}
	switch ix.typ {
	case "vectorSearch":
		ix.filters = map[string]bool{}
		for _, x := range arr(ix.def, "fields") {
			f, _ := x.(bson.D)
			path := str(f, "path")
			switch str(f, "type") {
			case "vector":
				n, _ := intArg(f, "numDimensions")
				if ix.vectorPath != "" || path == "" || n < 1 || n > 8192 {
					return nil, fmt.Errorf("vector field %q: one vector field with numDimensions 1 to 8192", path)
				}
				switch sim := str(f, "similarity"); sim {
				case "cosine", "euclidean", "dotProduct":
					ix.vectorPath, ix.dims, ix.similarity = path, n, sim
				default:
					return nil, fmt.Errorf("vector field %q: similarity %q", path, sim)
				}
			case "filter":
				if path == "" {
					return nil, fmt.Errorf("a filter field needs a path")
				}
				ix.filters[path] = true
			default:
				return nil, fmt.Errorf("field %q: type %q is not vector or filter", path, str(f, "type"))
			}
		}
		if ix.vectorPath == "" {
			return nil, fmt.Errorf("a vectorSearch index needs a vector field")
		}
	case "search", "":
		ix.typ = "search"
		m := doc(ix.def, "mappings")
		if dyn, _ := get(m, "dynamic"); dyn != false {
			return nil, fmt.Errorf("the fake reads static mappings only (dynamic: false)")
		}
		ix.fields = map[string]fieldMapping{}
		for _, e := range doc(m, "fields") {
			f, _ := e.Value.(bson.D)
			fm := fieldMapping{typ: str(f, "type"), analyzer: str(f, "analyzer"), searchAnalyzer: str(f, "searchAnalyzer")}
			switch fm.typ {
			case "string":
				if fm.analyzer == "" || !analyzers[fm.analyzer] || fm.searchAnalyzer != "" && !analyzers[fm.searchAnalyzer] {
					return nil, fmt.Errorf("field %s: the fake's analyzers are lucene.whitespace and lucene.keyword, not %q/%q", e.Key, fm.analyzer, fm.searchAnalyzer)
				}
			case "token", "number", "boolean":
			default:
				return nil, fmt.Errorf("field %s: type %q", e.Key, fm.typ)
			}
			ix.fields[e.Key] = fm
		}
	default:
		return nil, fmt.Errorf("index type %q", ix.typ)
	}
	return ix, nil
}

func (s *Server) aggregate(ns string, t *txn, cmd bson.D) bson.D {
	pipeline := arr(cmd, "pipeline")
	if err := s.spec.pipeline(pipeline); err != nil {
		return s.note("pipeline", err)
	}
	c := s.coll(ns, t, false)
	rows, errReply := s.run(c, pipeline)
	if errReply != nil {
		return errReply
	}
	size, _ := intArg(doc(cmd, "cursor"), "batchSize")
	return s.firstBatch(ns, rows, size)
}

// run runs a pipeline on a collection.
func (s *Server) run(c *coll, pipeline bson.A) ([]row, bson.D) {
	var rows []row
	for i, x := range pipeline {
		st := x.(bson.D)
		name, arg := st[0].Key, st[0].Value
		var err error
		switch name {
		case "$vectorSearch":
			rows, err = vectorSearch(c, arg.(bson.D))
		case "$search":
			rows, err = search(c, arg.(bson.D))
		case "$rankFusion":
			var reply bson.D
			rows, reply = s.rankFusion(c, arg.(bson.D))
			if reply != nil {
				return nil, reply
			}
		case "$listSearchIndexes":
			rows = nil
			if c != nil {
				names := make([]string, 0, len(c.search))
				for n := range c.search {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					ix := c.search[n]
					rows = append(rows, row{doc: bson.D{{Key: "id", Value: ix.id}, {Key: "name", Value: ix.name}, {Key: "type", Value: ix.typ},
						{Key: "status", Value: "READY"}, {Key: "queryable", Value: true}, {Key: "latestDefinition", Value: ix.def}}})
				}
			}
		case "$match":
			if i == 0 {
				rows = all(c)
			}
			q := arg.(bson.D)
			kept := rows[:0]
			for _, r := range rows {
				if match(r.doc, q) {
					kept = append(kept, r)
				}
			}
			rows = kept
		case "$project":
			if i == 0 {
				rows = all(c)
			}
			for j := range rows {
				rows[j].doc = project(rows[j], arg.(bson.D))
			}
		case "$limit":
			if i == 0 {
				rows = all(c)
			}
			n, _ := num(arg)
			if int(n) < len(rows) {
				rows = rows[:int(n)]
			}
		case "$skip":
			if i == 0 {
				rows = all(c)
			}
			n, _ := num(arg)
			rows = rows[min(int(n), len(rows)):]
		case "$sort":
			if i == 0 {
				rows = all(c)
			}
			sortRows(rows, arg.(bson.D))
		case "$group":
			if i == 0 {
				rows = all(c)
			}
			g := arg.(bson.D)
			if len(g) != 2 || !isCount(g[1].Value) {
				return nil, fail(2, "BadValue", "the fake groups to count only")
			}
			if len(rows) == 0 {
				rows = nil
				break
			}
			id, _ := get(g, "_id")
			rows = []row{{doc: bson.D{{Key: "_id", Value: id}, {Key: g[1].Key, Value: int32(len(rows))}}}}
		default:
			return nil, fail(40324, "Location40324", "the fake does not run stage "+name)
		}
		if err != nil {
			return nil, fail(8, "UnknownError", err.Error())
		}
	}
	return rows, nil
}

func isCount(v any) bool {
	d, ok := v.(bson.D)
	if !ok || len(d) != 1 || d[0].Key != "$sum" {
		return false
	}
	n, isNum := num(d[0].Value)
	return isNum && n == 1
}

// byScore sorts rows by a score, best first, then by _id.
func byScore(rows []row, meta string) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].meta[meta], rows[j].meta[meta]
		if a != b {
			return a > b
		}
		x, _ := get(rows[i].doc, "_id")
		y, _ := get(rows[j].doc, "_id")
		return idKey(x) < idKey(y)
	})
}

func floats(v any) ([]float64, bool) {
	a, ok := v.(bson.A)
	if !ok {
		return nil, false
	}
	out := make([]float64, len(a))
	for i, x := range a {
		if out[i], ok = num(x); !ok {
			return nil, false
		}
	}
	return out, true
}

func vectorSearch(c *coll, a bson.D) ([]row, error) {
	var ix *searchIndex
	if c != nil {
		ix = c.search[str(a, "index")]
	}
	if ix == nil || ix.typ != "vectorSearch" {
		return nil, nil // Atlas answers nothing for a missing index
	}
	if p := str(a, "path"); p != ix.vectorPath {
		return nil, fmt.Errorf("path %q is not indexed as vector in %s", p, ix.name)
	}
	qv, okv := floats(mustGet(a, "queryVector"))
	if !okv || len(qv) != ix.dims {
		return nil, fmt.Errorf("queryVector has %d dimensions; the index has %d", len(qv), ix.dims)
	}
	limit, _ := intArg(a, "limit")
	exact := boolean(a, "exact")
	cands, hasCands := intArg(a, "numCandidates")
	switch {
	case !exact && !hasCands:
		return nil, fmt.Errorf("numCandidates is required for an ANN search")
	case hasCands && (cands < limit || cands > 10000):
		return nil, fmt.Errorf("numCandidates %d must be between limit %d and 10000", cands, limit)
	case limit < 1:
		return nil, fmt.Errorf("limit must be positive")
	}
	f := doc(a, "filter")
	named := map[string]bool{}
	queryFields(f, named)
	for field := range named {
		if !ix.filters[field] {
			return nil, fmt.Errorf("path '%s' needs to be indexed as filter", field)
		}
	}
	var rows []row
	qn := norm(qv)
	vc := c.vectors(ix.vectorPath)
	for k, dv := range vc.vecs {
		d := c.docs[k]
		if len(dv) != ix.dims || !match(d, f) {
			continue
		}
		dot := 0.0
		for i := range dv {
			dot += dv[i] * qv[i]
		}
		var score float64
		switch ix.similarity {
		case "cosine":
			if n := vc.norms[k] * qn; n > 0 {
				score = (1 + dot/n) / 2
			}
		case "dotProduct":
			score = (1 + dot) / 2
		default:
			e := 0.0
			for i := range dv {
				e += (dv[i] - qv[i]) * (dv[i] - qv[i])
			}
			score = 1 / (1 + e)
		}
		score = float64(float32(score))
		rows = append(rows, row{doc: d, meta: map[string]float64{"vectorSearchScore": score, "score": score}})
	}
	byScore(rows, "vectorSearchScore")
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

func mustGet(d bson.D, key string) any { v, _ := get(d, key); return v }

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// vectorCache is a vector field's values, decoded, with their norms,
// built on first use after each write.
type vectorCache struct {
	path  string
	vecs  map[string][]float64
	norms map[string]float64
}

func (c *coll) vectors(path string) *vectorCache {
	if c.vecs != nil && c.vecs.path == path {
		return c.vecs
	}
	vc := &vectorCache{path: path, vecs: map[string][]float64{}, norms: map[string]float64{}}
	for k, d := range c.docs {
		v, _ := get(d, path)
		if dv, ok := floats(v); ok {
			vc.vecs[k], vc.norms[k] = dv, norm(dv)
		}
	}
	c.vecs = vc
	return vc
}

// textIndexCache is a string field's postings for BM25, built on first
// use after each write.
type textIndexCache struct {
	field    string
	postings map[string]map[string]int // token → doc key → frequency
	lengths  map[string]int
	avg      float64
}

func (c *coll) textIndex(field string) *textIndexCache {
	if c.text != nil && c.text.field == field {
		return c.text
	}
	t := &textIndexCache{field: field, postings: map[string]map[string]int{}, lengths: map[string]int{}}
	total := 0
	for k, d := range c.docs {
		v, _ := get(d, field)
		sv, ok := v.(string)
		if !ok {
			continue
		}
		toks := strings.Fields(sv)
		t.lengths[k] = len(toks)
		total += len(toks)
		for _, tok := range toks {
			p := t.postings[tok]
			if p == nil {
				p = map[string]int{}
				t.postings[tok] = p
			}
			p[k]++
		}
	}
	if len(t.lengths) > 0 {
		t.avg = float64(total) / float64(len(t.lengths))
	}
	c.text = t
	return t
}

// scored is a search operator's result: each matching document's score.
type scored map[string]float64

func search(c *coll, a bson.D) ([]row, error) {
	name := str(a, "index")
	if name == "" {
		name = "default"
	}
	var ix *searchIndex
	if c != nil {
		ix = c.search[name]
	}
	if ix == nil || ix.typ != "search" {
		return nil, nil // Atlas answers nothing for a missing index
	}
	var op bson.D
	for _, e := range a {
		switch e.Key {
		case "index", "scoreDetails", "concurrent", "returnStoredSource":
		default:
			op = bson.D{e}
		}
	}
	if op == nil {
		return nil, fmt.Errorf("$search needs an operator")
	}
	res, err := evalOp(c, ix, op)
	if err != nil {
		return nil, err
	}
	var rows []row
	for k, sc := range res {
		sc = float64(float32(sc)) // Lucene scores are 32-bit floats
		rows = append(rows, row{doc: c.docs[k], meta: map[string]float64{"searchScore": sc, "score": sc}})
	}
	byScore(rows, "searchScore")
	return rows, nil
}

// evalOp runs one Atlas Search operator over a collection.
func evalOp(c *coll, ix *searchIndex, op bson.D) (scored, error) {
	name, a := op[0].Key, op[0].Value.(bson.D)
	path := str(a, "path")
	mapped, isMapped := ix.fields[path]
	if name != "compound" && !isMapped {
		return nil, fmt.Errorf("%s: path %q is not mapped in index %s", name, path, ix.name)
	}
	out := scored{}
	switch name {
	case "text":
		if mapped.typ != "string" {
			return nil, fmt.Errorf("text: path %q is not indexed as string", path)
		}
		t := c.textIndex(path)
		toks := strings.Fields(str(a, "query"))
		n := float64(len(t.lengths))
		const k1, b = 1.2, 0.75
		hits := map[string]int{}
		for _, tok := range toks {
			p := t.postings[tok]
			if len(p) == 0 {
				continue
			}
			df := float64(len(p))
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			for k, tf := range p {
				f := float64(tf)
				out[k] += idf * f / (f + k1*(1-b+b*float64(t.lengths[k])/t.avg))
				hits[k]++
			}
		}
		if str(a, "matchCriteria") == "all" {
			for k := range out {
				if hits[k] < len(toks) {
					delete(out, k)
				}
			}
		}
	case "equals", "in", "range", "exists":
		if name != "exists" && mapped.typ == "string" {
			return nil, fmt.Errorf("%s: path %q must be indexed as token, number or boolean, not string", name, path)
		}
		if name == "range" && mapped.typ != "number" {
			return nil, fmt.Errorf("range: path %q is not indexed as number", path)
		}
		for k, d := range c.docs {
			v, has := get(d, path)
			if has && termMatch(name, v, a) {
				out[k] = 1
			}
		}
	case "compound":
		return compound(c, ix, a)
	default:
		return nil, fmt.Errorf("the fake does not run search operator %s", name)
	}
	return out, nil
}

func termMatch(op string, v any, a bson.D) bool {
	switch op {
	case "exists":
		return true
	case "equals":
		return equal(v, mustGet(a, "value"))
	case "in":
		want := mustGet(a, "value")
		xs, isArr := want.(bson.A)
		if !isArr {
			xs = bson.A{want}
		}
		for _, x := range xs {
			if equal(v, x) {
				return true
			}
		}
		return false
	}
	for _, bound := range []string{"gt", "gte", "lt", "lte"} {
		if w, has := get(a, bound); has && !opMatch(v, true, "$"+bound, w) {
			return false
		}
	}
	return true
}

func clauses(v any) []bson.D {
	switch x := v.(type) {
	case bson.D:
		return []bson.D{x}
	case bson.A:
		var out []bson.D
		for _, y := range x {
			if d, ok := y.(bson.D); ok {
				out = append(out, d)
			}
		}
		return out
	}
	return nil
}

// compound: every must and filter clause holds, no mustNot clause does,
// and at least minimumShouldMatch should clauses do (one when there is
// nothing else); must and should clauses add their scores.
func compound(c *coll, ix *searchIndex, a bson.D) (scored, error) {
	run := func(key string) ([]scored, error) {
		var out []scored
		for _, cl := range clauses(mustGet(a, key)) {
			r, err := evalOp(c, ix, cl)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	must, err := run("must")
	if err != nil {
		return nil, err
	}
	filters, err := run("filter")
	if err != nil {
		return nil, err
	}
	should, err := run("should")
	if err != nil {
		return nil, err
	}
	mustNot, err := run("mustNot")
	if err != nil {
		return nil, err
	}
	minShould, _ := intArg(a, "minimumShouldMatch")
	if len(must) == 0 && len(filters) == 0 && len(should) > 0 && minShould == 0 {
		minShould = 1
	}
	out := scored{}
	for k := range c.docs {
		score, holds := 0.0, true
		for _, m := range must {
			sc, in := m[k]
			holds = holds && in
			score += sc
		}
		for _, f := range filters {
			_, in := f[k]
			holds = holds && in
		}
		for _, n := range mustNot {
			if _, in := n[k]; in {
				holds = false
			}
		}
		matched := 0
		for _, sh := range should {
			if sc, in := sh[k]; in {
				matched++
				score += sc
			}
		}
		if holds && matched >= minShould {
			out[k] = score
		}
	}
	return out, nil
}

// rankFusion fuses ranked pipelines by reciprocal rank: a document scores
// Σ weight / (60 + rank) over the pipelines that return it, rank from 1.
func (s *Server) rankFusion(c *coll, a bson.D) ([]row, bson.D) {
	pipelines := doc(doc(a, "input"), "pipelines")
	weights := doc(doc(a, "combination"), "weights")
	scores := map[string]float64{}
	docs := map[string]bson.D{}
	for _, p := range pipelines {
		stages, _ := p.Value.(bson.A)
		if len(stages) == 0 {
			return nil, fail(2, "BadValue", "an input pipeline of $rankFusion is empty")
		}
		first := stages[0].(bson.D)[0].Key
		if first != "$vectorSearch" && first != "$search" && first != "$sort" {
			return nil, fail(2, "BadValue", "$rankFusion input pipeline "+p.Key+" must start with a ranked stage, not "+first)
		}
		rows, reply := s.run(c, stages)
		if reply != nil {
			return nil, reply
		}
		w := 1.0
		if x, has := get(weights, p.Key); has {
			w, _ = num(x)
		}
		for i, r := range rows {
			id, _ := get(r.doc, "_id")
			k := idKey(id)
			scores[k] += w / float64(60+i+1)
			docs[k] = c.docs[k]
		}
	}
	var rows []row
	for k, sc := range scores {
		rows = append(rows, row{doc: docs[k], meta: map[string]float64{"score": sc}})
	}
	byScore(rows, "score")
	return rows, nil
}
