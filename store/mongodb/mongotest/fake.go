// Package mongotest is a fake MongoDB Atlas deployment for tests: a
// one-member replica set speaking MongoDB's wire protocol (OP_MSG, and
// OP_QUERY for the first handshake), which the official Go driver talks
// to as to any deployment. It keeps databases and collections in memory
// and answers the commands Quarry's store sends — hello, ping, buildInfo,
// insert, update (replacements, with upsert), delete, find, getMore,
// killCursors, distinct, aggregate, create, drop, createIndexes,
// createSearchIndexes, and sessions with multi-document transactions
// (snapshot copies committed whole; of two transactions writing one
// collection, the later commit fails with a write conflict labelled
// TransientTransactionError, which the driver retries on — MongoDB's
// conflicts are per document, so the fake's coarser rule exercises the
// retry more often than a server would).
//
// Aggregation runs $match, $project (inclusion and $meta scores), $limit,
// $skip, $sort, $group (counting), $listSearchIndexes, and Atlas's
// $vectorSearch (exact, cosine scored as (1 + cos) / 2, the filter
// limited to the index's filter fields), $search (text with Lucene's
// BM25 over the whitespace analyzer's tokens, compound, equals, in, range
// and exists over the index's mapped fields) and $rankFusion (reciprocal
// rank fusion with Atlas's constant of 60). Every pipeline and query is
// checked against MongoDB's published MQL specifications (kept in mql/):
// stage, operator and argument names, required arguments, argument types;
// search index definitions are checked as Atlas documents them.
//
// What it does not imitate: Atlas's approximate vector search, Lucene's
// norm encoding (lengths here are exact), analyzers beyond whitespace
// and keyword, search indexes taking time to build and lagging writes,
// read and write concerns, and sharding.
package mongotest

import (
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

var loadedSpec = sync.OnceValues(loadSpec)

// Server is a fake MongoDB Atlas deployment.
type Server struct {
	ln   net.Listener
	addr string
	spec spec

	mu        sync.Mutex
	colls     map[string]*coll // by namespace, "db.coll"
	cursors   map[int64]*cursor
	next      int64
	txns      map[string]*txn
	committed map[string]bool
	calls     map[string]int
	invalid   []string
	wg        sync.WaitGroup
	conns     map[net.Conn]bool
}

type coll struct {
	docs    map[string]bson.D // by idKey of _id
	version int
	search  map[string]*searchIndex
	text    *textIndexCache
	vecs    *vectorCache
}

func (c *coll) clone() *coll {
	cp := &coll{docs: make(map[string]bson.D, len(c.docs)), version: c.version, search: c.search}
	for k, v := range c.docs {
		cp.docs[k] = v
	}
	return cp
}

type cursor struct {
	ns   string
	rest []bson.D
}

type txn struct {
	base  map[string]int // namespace → its version when first read
	colls map[string]*coll
	wrote map[string]bool
}

// New starts a fake deployment; it is closed when the test ends, and any
// request outside MongoDB's specifications fails the test.
func New(t testing.TB) *Server {
	t.Helper()
	sp, err := loadedSpec()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, addr: ln.Addr().String(), spec: sp, colls: map[string]*coll{}, cursors: map[int64]*cursor{},
		txns: map[string]*txn{}, committed: map[string]bool{}, calls: map[string]int{}, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		s.Close()
		for _, msg := range s.TakeInvalid() {
			t.Errorf("mongotest: %s", msg)
		}
	})
	return s
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Close stops the server and waits for its connections to end.
func (s *Server) Close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// URI is the connection string of the fake, with Quarry's and the
// driver's parameters when given.
func (s *Server) URI(params string) string {
	u := "mongodb://" + s.addr + "/quarry"
	if params != "" {
		u += "?" + params
	}
	return u
}

// TakeInvalid returns the requests outside MongoDB's specifications so
// far and forgets them; those left when the test ends fail it.
func (s *Server) TakeInvalid() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.invalid
	s.invalid = nil
	return out
}

// Calls returns how many of each command ("aggregate") the server
// received.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// Command failures.
func fail(code int32, name, msg string, labels ...string) bson.D {
	d := bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: msg}, {Key: "code", Value: code}, {Key: "codeName", Value: name}}
	if len(labels) > 0 {
		d = append(d, bson.E{Key: "errorLabels", Value: labels})
	}
	return d
}

func ok(fields ...bson.E) bson.D { return append(bson.D(fields), bson.E{Key: "ok", Value: 1.0}) }

func get(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

func str(d bson.D, key string) string { v, _ := get(d, key); s, _ := v.(string); return s }

func doc(d bson.D, key string) bson.D { v, _ := get(d, key); x, _ := v.(bson.D); return x }

func arr(d bson.D, key string) bson.A { v, _ := get(d, key); x, _ := v.(bson.A); return x }

func boolean(d bson.D, key string) bool { v, _ := get(d, key); b, _ := v.(bool); return b }

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func intArg(d bson.D, key string) (int, bool) {
	v, has := get(d, key)
	f, isNum := num(v)
	return int(f), has && isNum
}

// idKey is a document's key in its collection: its _id, typed.
func idKey(v any) string {
	switch x := v.(type) {
	case string:
		return "s:" + x
	case bson.ObjectID:
		return "o:" + x.Hex()
	}
	if f, ok := num(v); ok {
		return fmt.Sprintf("n:%020.6f", f)
	}
	return fmt.Sprintf("x:%v", v)
}

// command answers one command.
func (s *Server) command(cmd bson.D) bson.D {
	if len(cmd) == 0 {
		return fail(2, "BadValue", "empty command")
	}
	name := cmd[0].Key
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[name]++
	db := str(cmd, "$db")
	switch name {
	case "hello", "isMaster", "ismaster":
		return ok(
			bson.E{Key: "helloOk", Value: true}, bson.E{Key: "isWritablePrimary", Value: true}, bson.E{Key: "ismaster", Value: true},
			bson.E{Key: "setName", Value: "atlas-fake"}, bson.E{Key: "setVersion", Value: int32(1)},
			bson.E{Key: "electionId", Value: bson.ObjectID{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1}},
			bson.E{Key: "hosts", Value: bson.A{s.addr}}, bson.E{Key: "primary", Value: s.addr}, bson.E{Key: "me", Value: s.addr},
			bson.E{Key: "maxBsonObjectSize", Value: int32(16 << 20)}, bson.E{Key: "maxMessageSizeBytes", Value: int32(maxMessage)},
			bson.E{Key: "maxWriteBatchSize", Value: int32(100000)}, bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(30)},
			bson.E{Key: "connectionId", Value: int32(1)}, bson.E{Key: "minWireVersion", Value: int32(0)},
			bson.E{Key: "maxWireVersion", Value: int32(25)}, bson.E{Key: "readOnly", Value: false})
	case "ping", "endSessions":
		return ok()
	case "buildInfo", "buildinfo":
		return ok(bson.E{Key: "version", Value: "8.2.1"}, bson.E{Key: "versionArray", Value: bson.A{int32(8), int32(2), int32(1), int32(0)}})
	case "commitTransaction", "abortTransaction":
		return s.endTxn(cmd, name == "commitTransaction")
	case "getMore":
		return s.getMore(cmd)
	case "killCursors":
		for _, id := range arr(cmd, "cursors") {
			if n, ok := id.(int64); ok {
				delete(s.cursors, n)
			}
		}
		return ok(bson.E{Key: "cursorsKilled", Value: arr(cmd, "cursors")})
	}
	collName, _ := cmd[0].Value.(string)
	ns := db + "." + collName
	t, errReply := s.txnOf(cmd)
	if errReply != nil {
		return errReply
	}
	switch name {
	case "create":
		if s.coll(ns, t, false) != nil {
			return fail(48, "NamespaceExists", "Collection "+ns+" already exists.")
		}
		s.coll(ns, t, true)
		s.touched(ns, t)
		return ok()
	case "drop":
		if t != nil {
			return fail(263, "OperationNotSupportedInTransaction", "drop in a transaction")
		}
		delete(s.colls, ns)
		return ok(bson.E{Key: "ns", Value: ns})
	case "createIndexes":
		s.coll(ns, t, true)
		return ok(bson.E{Key: "numIndexesBefore", Value: int32(1)}, bson.E{Key: "numIndexesAfter", Value: int32(2)})
	case "createSearchIndexes":
		return s.createSearchIndexes(ns, cmd)
	case "insert":
		return s.insert(ns, t, cmd)
	case "update":
		return s.update(ns, t, cmd)
	case "delete":
		return s.delete(ns, t, cmd)
	case "find":
		return s.find(ns, t, cmd)
	case "distinct":
		return s.distinct(ns, t, cmd)
	case "aggregate":
		return s.aggregate(ns, t, cmd)
	}
	return fail(59, "CommandNotFound", "no such command: '"+name+"'")
}

// note records a request outside the specifications and answers it as
// MongoDB answers a bad one.
func (s *Server) note(what string, err error) bson.D {
	msg := what + ": " + err.Error()
	s.invalid = append(s.invalid, msg)
	return fail(2, "BadValue", msg)
}

// txnOf is the transaction a command runs in, nil outside one.
func (s *Server) txnOf(cmd bson.D) (*txn, bson.D) {
	auto, has := get(cmd, "autocommit")
	if !has || auto != false {
		return nil, nil
	}
	key := txnKey(cmd)
	t := s.txns[key]
	if boolean(cmd, "startTransaction") {
		t = &txn{base: map[string]int{}, colls: map[string]*coll{}, wrote: map[string]bool{}}
		s.txns[key] = t
	}
	if t == nil {
		return nil, fail(251, "NoSuchTransaction", "Transaction "+key+" has been aborted.", "TransientTransactionError")
	}
	return t, nil
}

func txnKey(cmd bson.D) string {
	id := ""
	if b, ok := get(doc(cmd, "lsid"), "id"); ok {
		if bin, ok := b.(bson.Binary); ok {
			id = hex.EncodeToString(bin.Data)
		}
	}
	n, _ := get(cmd, "txnNumber")
	return fmt.Sprintf("%s:%v", id, n)
}

func (s *Server) endTxn(cmd bson.D, commit bool) bson.D {
	key := txnKey(cmd)
	t := s.txns[key]
	delete(s.txns, key)
	if t == nil {
		if commit && s.committed[key] {
			return ok() // a commit sent again
		}
		if !commit {
			return ok()
		}
		return fail(251, "NoSuchTransaction", "Transaction "+key+" has been aborted.", "TransientTransactionError")
	}
	if !commit {
		return ok()
	}
	for ns := range t.wrote {
		cur, v := s.colls[ns], -1
		if cur != nil {
			v = cur.version
		}
		if v != t.base[ns] {
			return fail(112, "WriteConflict", "Write conflict during plan execution and yielding is disabled.", "TransientTransactionError")
		}
	}
	for ns := range t.wrote {
		cp := t.colls[ns]
		if cur := s.colls[ns]; cur != nil {
			cp.search = cur.search
			cp.version = cur.version + 1
		}
		cp.text, cp.vecs = nil, nil
		s.colls[ns] = cp
	}
	s.committed[key] = true
	return ok()
}

// coll returns a namespace's collection as the transaction (if any) sees
// it, creating it when create is set; nil when there is none.
func (s *Server) coll(ns string, t *txn, create bool) *coll {
	if t == nil {
		c := s.colls[ns]
		if c == nil && create {
			c = &coll{docs: map[string]bson.D{}, search: map[string]*searchIndex{}}
			s.colls[ns] = c
		}
		return c
	}
	if c := t.colls[ns]; c != nil {
		return c
	}
	base := s.colls[ns]
	if base == nil && !create {
		return nil
	}
	var c *coll
	if base == nil {
		c = &coll{docs: map[string]bson.D{}, search: map[string]*searchIndex{}}
		t.base[ns] = -1
	} else {
		c = base.clone()
		t.base[ns] = base.version
	}
	t.colls[ns] = c
	return c
}

// touched marks a write to a collection.
func (s *Server) touched(ns string, t *txn) {
	c := s.coll(ns, t, true)
	c.version++
	c.text, c.vecs = nil, nil
	if t != nil {
		t.wrote[ns] = true
	}
}

func (s *Server) insert(ns string, t *txn, cmd bson.D) bson.D {
	c := s.coll(ns, t, true)
	n := 0
	var errs bson.A
	for i, x := range arr(cmd, "documents") {
		d, isDoc := x.(bson.D)
		id, hasID := get(d, "_id")
		if !isDoc || !hasID {
			return fail(2, "BadValue", "a document needs an _id")
		}
		k := idKey(id)
		if _, dup := c.docs[k]; dup {
			errs = append(errs, bson.D{{Key: "index", Value: int32(i)}, {Key: "code", Value: int32(11000)},
				{Key: "errmsg", Value: fmt.Sprintf("E11000 duplicate key error collection: %s index: _id_ dup key: { _id: %v }", ns, id)}})
			break
		}
		c.docs[k] = d
		n++
	}
	if n > 0 {
		s.touched(ns, t)
	}
	r := ok(bson.E{Key: "n", Value: int32(n)})
	if errs != nil {
		r = append(r, bson.E{Key: "writeErrors", Value: errs})
	}
	return r
}

func (s *Server) update(ns string, t *txn, cmd bson.D) bson.D {
	c := s.coll(ns, t, true)
	n, modified := 0, 0
	var upserted bson.A
	for i, x := range arr(cmd, "updates") {
		u, _ := x.(bson.D)
		q, repl := doc(u, "q"), doc(u, "u")
		if err := s.spec.query(q); err != nil {
			return s.note("update filter", err)
		}
		if len(repl) > 0 && strings.HasPrefix(repl[0].Key, "$") {
			return fail(2, "BadValue", "the fake takes replacement updates only")
		}
		multi := boolean(u, "multi")
		matched := false
		for _, k := range sortedKeys(c.docs) {
			d := c.docs[k]
			if !match(d, q) {
				continue
			}
			id, _ := get(d, "_id")
			c.docs[k] = withID(repl, id)
			n++
			modified++
			matched = true
			if !multi {
				break
			}
		}
		if !matched && boolean(u, "upsert") {
			id, has := get(repl, "_id")
			if !has {
				id, has = get(q, "_id")
			}
			if !has {
				id = bson.NewObjectID()
			}
			c.docs[idKey(id)] = withID(repl, id)
			n++
			upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: id}})
		}
	}
	s.touched(ns, t)
	r := ok(bson.E{Key: "n", Value: int32(n)}, bson.E{Key: "nModified", Value: int32(modified)})
	if upserted != nil {
		r = append(r, bson.E{Key: "upserted", Value: upserted})
	}
	return r
}

// withID is a replacement document with the _id first.
func withID(d bson.D, id any) bson.D {
	out := bson.D{{Key: "_id", Value: id}}
	for _, e := range d {
		if e.Key != "_id" {
			out = append(out, e)
		}
	}
	return out
}

func (s *Server) delete(ns string, t *txn, cmd bson.D) bson.D {
	c := s.coll(ns, t, false)
	n := 0
	for _, x := range arr(cmd, "deletes") {
		del, _ := x.(bson.D)
		q := doc(del, "q")
		if err := s.spec.query(q); err != nil {
			return s.note("delete filter", err)
		}
		if c == nil {
			continue
		}
		limit, _ := intArg(del, "limit")
		for _, k := range sortedKeys(c.docs) {
			if match(c.docs[k], q) {
				delete(c.docs, k)
				n++
				if limit == 1 {
					break
				}
			}
		}
	}
	if n > 0 {
		s.touched(ns, t)
	}
	return ok(bson.E{Key: "n", Value: int32(n)})
}

func sortedKeys(m map[string]bson.D) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// all is a collection's documents in _id order.
func all(c *coll) []row {
	if c == nil {
		return nil
	}
	out := make([]row, 0, len(c.docs))
	for _, k := range sortedKeys(c.docs) {
		out = append(out, row{doc: c.docs[k]})
	}
	return out
}

// row is a document passing through a pipeline, with its scores.
type row struct {
	doc  bson.D
	meta map[string]float64
}

func (s *Server) find(ns string, t *txn, cmd bson.D) bson.D {
	q := doc(cmd, "filter")
	if err := s.spec.query(q); err != nil {
		return s.note("find filter", err)
	}
	c := s.coll(ns, t, false)
	var rows []row
	for _, r := range all(c) {
		if match(r.doc, q) {
			rows = append(rows, r)
		}
	}
	if srt := doc(cmd, "sort"); len(srt) > 0 {
		sortRows(rows, srt)
	}
	if n, has := intArg(cmd, "skip"); has {
		rows = rows[min(n, len(rows)):]
	}
	if n, has := intArg(cmd, "limit"); has && n > 0 && n < len(rows) {
		rows = rows[:n]
	}
	if p := doc(cmd, "projection"); len(p) > 0 {
		for i := range rows {
			rows[i].doc = project(rows[i], p)
		}
	}
	batch, _ := intArg(cmd, "batchSize")
	return s.firstBatch(ns, rows, batch)
}

func (s *Server) distinct(ns string, t *txn, cmd bson.D) bson.D {
	key := str(cmd, "key")
	q := doc(cmd, "query")
	if err := s.spec.query(q); err != nil {
		return s.note("distinct query", err)
	}
	seen := map[string]bool{}
	values := bson.A{}
	for _, r := range all(s.coll(ns, t, false)) {
		if !match(r.doc, q) {
			continue
		}
		v, has := get(r.doc, key)
		if !has {
			continue
		}
		vs := bson.A{v}
		if a, isArr := v.(bson.A); isArr {
			vs = a
		}
		for _, x := range vs {
			if k := idKey(x); !seen[k] {
				seen[k] = true
				values = append(values, x)
			}
		}
	}
	return ok(bson.E{Key: "values", Value: values})
}

// batchBytes bounds a cursor batch.
const batchBytes = 8 << 20

func (s *Server) firstBatch(ns string, rows []row, size int) bson.D {
	docs := make([]bson.D, len(rows))
	for i, r := range rows {
		docs[i] = r.doc
	}
	batch, id := s.batch(ns, docs, size, 0)
	return ok(bson.E{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: batch}, {Key: "id", Value: id}, {Key: "ns", Value: ns}}})
}

// batch cuts the next batch off docs (101 documents by default, at most
// 8 MB), keeping the rest under a cursor id (0 when none are left).
func (s *Server) batch(ns string, docs []bson.D, size int, id int64) (bson.A, int64) {
	if size <= 0 {
		size = 101
	}
	out := bson.A{}
	bytes := 0
	i := 0
	for ; i < len(docs) && i < size; i++ {
		raw, _ := bson.Marshal(docs[i])
		if i > 0 && bytes+len(raw) > batchBytes {
			break
		}
		bytes += len(raw)
		out = append(out, docs[i])
	}
	if i == len(docs) {
		if id != 0 {
			delete(s.cursors, id)
		}
		return out, 0
	}
	if id == 0 {
		s.next++
		id = s.next
	}
	s.cursors[id] = &cursor{ns: ns, rest: docs[i:]}
	return out, id
}

func (s *Server) getMore(cmd bson.D) bson.D {
	id, _ := cmd[0].Value.(int64)
	c := s.cursors[id]
	if c == nil {
		return fail(43, "CursorNotFound", fmt.Sprintf("cursor id %d not found", id))
	}
	size, _ := intArg(cmd, "batchSize")
	if size <= 0 {
		size = math.MaxInt32
	}
	batch, next := s.batch(c.ns, c.rest, size, id)
	return ok(bson.E{Key: "cursor", Value: bson.D{{Key: "nextBatch", Value: batch}, {Key: "id", Value: next}, {Key: "ns", Value: c.ns}}})
}

// sortRows sorts by a sort document's fields (1 up, -1 down).
func sortRows(rows []row, spec bson.D) {
	sort.SliceStable(rows, func(i, j int) bool {
		for _, e := range spec {
			dir, _ := num(e.Value)
			a, _ := get(rows[i].doc, e.Key)
			b, _ := get(rows[j].doc, e.Key)
			c := compare(a, b)
			if c != 0 {
				return (c < 0) == (dir > 0)
			}
		}
		return false
	})
}

// project applies an inclusion projection, with {$meta: name} fields.
func project(r row, spec bson.D) bson.D {
	keep := map[string]bool{"_id": true}
	var metas bson.D
	for _, e := range spec {
		if m, isDoc := e.Value.(bson.D); isDoc {
			if name := str(m, "$meta"); name != "" {
				metas = append(metas, bson.E{Key: e.Key, Value: r.meta[name]})
				continue
			}
		}
		f, isNum := num(e.Value)
		b, isBool := e.Value.(bool)
		keep[e.Key] = (isNum && f != 0) || (isBool && b)
	}
	var out bson.D
	for _, e := range r.doc {
		if keep[e.Key] {
			out = append(out, e)
		}
	}
	return append(out, metas...)
}
