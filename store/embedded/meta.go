package embedded

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bitset"
)

// metaIndex indexes the filterable fields of a collection (the schema's and
// the built-in sourceType and sourceName) so a filter compiles to an
// allow-set of internal ids without reading a row: a sorted id list per
// (field, value) — sparse, since most values (a source name) hold few
// documents — one "present" bitset per field, and a dense column per
// numeric field for ranges. Its semantics are filter.Matcher's; storetest
// holds the two together.
//
// Removal is lazy: a removed id is marked dead and stays in its lists,
// which compile masks with the live set, until purge drops it. The graph
// reuses ids only after compaction, and compaction purges first.
type metaIndex struct {
	fields map[string]document.FieldType
	// postings maps field → value key → posting number.
	postings map[string]map[string]uint32
	lists    [][]uint32   // by posting number, ascending ids
	keys     []postingKey // by posting number
	present  map[string]*bitset.Set
	numeric  map[string][]float64 // by internal id; NaN when absent
	dead     *bitset.Set
	deadN    int
}

type postingKey struct{ Field, Key string }

func newMetaIndex(s *document.Schema) *metaIndex {
	m := &metaIndex{
		fields:   map[string]document.FieldType{"sourceType": document.TypeString, "sourceName": document.TypeString},
		postings: map[string]map[string]uint32{},
		present:  map[string]*bitset.Set{},
		numeric:  map[string][]float64{},
		dead:     bitset.New(0),
	}
	if s != nil {
		for _, f := range s.Fields {
			if f.Filterable {
				m.fields[f.Name] = f.Type
			}
		}
	}
	for f, t := range m.fields {
		m.postings[f] = map[string]uint32{}
		m.present[f] = bitset.New(0)
		if t.IsNumeric() {
			m.numeric[f] = nil
		}
	}
	return m
}

// valueKey is the equality key of a scalar: numbers that compare equal
// (2024 and 2024.0) share a key; strings and bools never collide with
// numbers.
func valueKey(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return "s" + x, true
	case bool:
		if x {
			return "b1", true
		}
		return "b0", true
	}
	f, i, isInt, ok := document.Number(v)
	if !ok {
		return "", false
	}
	if isInt {
		return "n" + strconv.FormatInt(i, 10), true
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return "n" + strconv.FormatInt(int64(f), 10), true
	}
	return "n" + strconv.FormatFloat(f, 'g', -1, 64), true
}

func (m *metaIndex) posting(field, key string) uint32 {
	p, ok := m.postings[field][key]
	if !ok {
		p = uint32(len(m.lists))
		m.postings[field][key] = p
		m.lists = append(m.lists, nil)
		m.keys = append(m.keys, postingKey{Field: field, Key: key})
	}
	return p
}

// insert adds id to a sorted list; ids mostly arrive in increasing order.
func insert(list []uint32, id uint32) []uint32 {
	if n := len(list); n == 0 || list[n-1] < id {
		return append(list, id)
	}
	i, found := slices.BinarySearch(list, id)
	if found {
		return list
	}
	return slices.Insert(list, i, id)
}

func (m *metaIndex) value(d *document.Document, field string) (any, bool) {
	switch field {
	case "sourceType":
		return d.SourceType, true
	case "sourceName":
		return d.SourceName, true
	}
	v, ok := d.Metadata[field]
	return v, ok && v != nil
}

// add indexes document d under internal id, which must not be dead.
func (m *metaIndex) add(id uint32, d *document.Document) {
	for field, t := range m.fields {
		v, ok := m.value(d, field)
		if !ok {
			continue
		}
		var elems []any
		if t.IsList() {
			l, _ := v.([]any)
			elems = l
		} else {
			elems = []any{v}
		}
		if len(elems) == 0 {
			continue
		}
		m.present[field].Add(id)
		for _, e := range elems {
			if k, ok := valueKey(e); ok {
				p := m.posting(field, k)
				m.lists[p] = insert(m.lists[p], id)
			}
		}
		if col, ok := m.numeric[field]; ok {
			for len(col) <= int(id) {
				col = append(col, math.NaN())
			}
			f, _, _, _ := document.Number(v)
			col[id] = f
			m.numeric[field] = col
		}
	}
}

// remove unindexes internal id; its list entries go at the next purge.
func (m *metaIndex) remove(id uint32) {
	for _, s := range m.present {
		s.Remove(id)
	}
	for _, col := range m.numeric {
		if int(id) < len(col) {
			col[id] = math.NaN()
		}
	}
	if !m.dead.Contains(id) {
		m.dead.Add(id)
		m.deadN++
	}
}

// purge drops dead ids from every list. It must run before a dead id is
// reused.
func (m *metaIndex) purge() {
	if m.deadN == 0 {
		return
	}
	for p, list := range m.lists {
		m.lists[p] = slices.DeleteFunc(list, m.dead.Contains)
	}
	m.dead.Reset()
	m.deadN = 0
}

// live returns list without dead ids, for checkpoints.
func (m *metaIndex) live(list []uint32) []uint32 {
	if m.deadN == 0 {
		return list
	}
	out := make([]uint32, 0, len(list))
	for _, id := range list {
		if !m.dead.Contains(id) {
			out = append(out, id)
		}
	}
	return out
}

// setOf turns a list into a bitset over [0, n).
func setOf(list []uint32, n int) *bitset.Set {
	s := bitset.New(n)
	for _, id := range list {
		s.Add(id)
	}
	return s
}

// compile evaluates a validated filter to the set of internal ids that
// match; n bounds the ids (the caller ANDs the result with the live set).
func (m *metaIndex) compile(e filter.Expr, n int) (*bitset.Set, error) {
	switch x := e.(type) {
	case *filter.Group:
		var out *bitset.Set
		for _, c := range x.Conditions {
			s, err := m.compile(c, n)
			if err != nil {
				return nil, err
			}
			switch {
			case out == nil:
				out = s
			case x.Op == filter.OpAnd:
				out.And(s)
			default:
				out.Or(s)
			}
		}
		if out == nil {
			out = bitset.New(n)
		}
		return out, nil
	case *filter.Condition:
		return m.condition(x, n)
	}
	return nil, fmt.Errorf("filter expression %T cannot be evaluated by the embedded store", e)
}

// eqList returns the ids whose field equals v (dead ones included).
func (m *metaIndex) eqList(field string, v any) []uint32 {
	k, ok := valueKey(v)
	if !ok {
		return nil
	}
	p, ok := m.postings[field][k]
	if !ok {
		return nil
	}
	return m.lists[p]
}

func (m *metaIndex) condition(c *filter.Condition, n int) (*bitset.Set, error) {
	if _, ok := m.fields[c.Field]; !ok {
		return nil, fmt.Errorf("field %q is not indexed for filtering", c.Field)
	}
	out := bitset.New(n)
	switch c.Op {
	case filter.OpEq:
		for _, id := range m.eqList(c.Field, c.Value) {
			out.Add(id)
		}
	case filter.OpNeq:
		out.Or(m.present[c.Field])
		for _, id := range m.eqList(c.Field, c.Value) {
			out.Remove(id)
		}
	case filter.OpIn, filter.OpContainsAny:
		for _, v := range c.Value.([]any) {
			for _, id := range m.eqList(c.Field, v) {
				out.Add(id)
			}
		}
	case filter.OpContainsAll:
		out.Or(m.present[c.Field])
		for _, v := range c.Value.([]any) {
			out.And(setOf(m.eqList(c.Field, v), n))
		}
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		col := m.numeric[c.Field]
		w, _, _, _ := document.Number(c.Value)
		for id, f := range col {
			if f != f { // NaN: absent
				continue
			}
			var keep bool
			switch c.Op {
			case filter.OpGt:
				keep = f > w
			case filter.OpGte:
				keep = f >= w
			case filter.OpLt:
				keep = f < w
			default:
				keep = f <= w
			}
			if keep {
				out.Add(uint32(id))
			}
		}
	default:
		return nil, fmt.Errorf("operator %s cannot be evaluated by the embedded store", c.Op)
	}
	return out, nil
}
