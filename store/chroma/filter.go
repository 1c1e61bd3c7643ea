package chroma

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/internal/where"
)

// whereDoc is a Chroma where object.
type whereDoc = where.Doc

// metaKey is the metadata key a filterable schema field is kept under.
func metaKey(name string) string { return "m_" + name }

// syntax is Chroma's where language: a record has a filterable field
// when q_has lists it ($ne holds for a record without the field), and a
// list of strings holds a value by $contains.
var syntax = where.Syntax{
	Dialect:    Dialect,
	SourceType: kSType,
	SourceName: kSName,
	Field:      metaKey,
	Present:    func(_, name string) any { return whereDoc{kHas: whereDoc{"$contains": name}} },
	Holds:      func(stored, value string) any { return whereDoc{stored: whereDoc{"$contains": value}} },
	Raw: func(fragment []byte) (any, error) {
		var obj map[string]json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(fragment)).Decode(&obj); err != nil || len(obj) == 0 {
			return nil, errors.New("a chroma raw fragment must be a JSON object holding a where clause")
		}
		return json.RawMessage(fragment), nil
	},
}

// visible is the where object of a user filter (nil for every record);
// false when the filter cannot match.
func (c *collection) visible(f filter.Expr) (any, bool, error) {
	w, fold, err := syntax.Compile(f, c.cfg.Schema)
	if err != nil || fold == filter.Never {
		return nil, false, err
	}
	return w, true, nil
}
