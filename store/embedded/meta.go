package embedded

import (
	"fmt"
	"math"
	"strconv"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/index/bitset"
)

// metaIndex indexes the filterable fields of a collection (the schema's and
// the built-in sourceType and sourceName) so a filter compiles to an
// allow-set of internal ids without reading a row: one bitset per (field,
// value), one "present" bitset per field, and a dense column per numeric
// field for ranges. Its semantics are filter.Matcher's; storetest holds the
// two together.
type metaIndex struct {
	fields map[string]document.FieldType
	// postings maps field → value key → posting number.
	postings map[string]map[string]uint32
	sets     []*bitset.Set // by posting number
	keys     []postingKey  // by posting number
	present  map[string]*bitset.Set
	numeric  map[string][]float64 // by internal id; NaN when absent
	// byDoc lists each document's postings, so removing it touches only
	// its own bitsets.
	byDoc [][]uint32
}

type postingKey struct{ Field, Key string }

func newMetaIndex(s *document.Schema) *metaIndex {
	m := &metaIndex{
		fields:   map[string]document.FieldType{"sourceType": document.TypeString, "sourceName": document.TypeString},
		postings: map[string]map[string]uint32{},
		present:  map[string]*bitset.Set{},
		numeric:  map[string][]float64{},
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
		p = uint32(len(m.sets))
		m.postings[field][key] = p
		m.sets = append(m.sets, bitset.New(0))
		m.keys = append(m.keys, postingKey{Field: field, Key: key})
	}
	return p
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

// add indexes document d under internal id.
func (m *metaIndex) add(id uint32, d *document.Document) {
	for int(id) >= len(m.byDoc) {
		m.byDoc = append(m.byDoc, nil)
	}
	var mine []uint32
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
				m.sets[p].Add(id)
				mine = append(mine, p)
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
	m.byDoc[id] = mine
}

// remove drops every trace of internal id.
func (m *metaIndex) remove(id uint32) {
	if int(id) >= len(m.byDoc) {
		return
	}
	for _, p := range m.byDoc[id] {
		m.sets[p].Remove(id)
	}
	m.byDoc[id] = nil
	for _, s := range m.present {
		s.Remove(id)
	}
	for _, col := range m.numeric {
		if int(id) < len(col) {
			col[id] = math.NaN()
		}
	}
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

func (m *metaIndex) eqSet(field string, v any) *bitset.Set {
	k, ok := valueKey(v)
	if !ok {
		return nil
	}
	p, ok := m.postings[field][k]
	if !ok {
		return nil
	}
	return m.sets[p]
}

func (m *metaIndex) condition(c *filter.Condition, n int) (*bitset.Set, error) {
	if _, ok := m.fields[c.Field]; !ok {
		return nil, fmt.Errorf("field %q is not indexed for filtering", c.Field)
	}
	out := bitset.New(n)
	switch c.Op {
	case filter.OpEq:
		if s := m.eqSet(c.Field, c.Value); s != nil {
			out.Or(s)
		}
	case filter.OpNeq:
		out.Or(m.present[c.Field])
		if s := m.eqSet(c.Field, c.Value); s != nil {
			out.AndNot(s)
		}
	case filter.OpIn, filter.OpContainsAny:
		for _, v := range c.Value.([]any) {
			if s := m.eqSet(c.Field, v); s != nil {
				out.Or(s)
			}
		}
	case filter.OpContainsAll:
		out.Or(m.present[c.Field])
		for _, v := range c.Value.([]any) {
			s := m.eqSet(c.Field, v)
			if s == nil {
				return bitset.New(n), nil
			}
			out.And(s)
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
