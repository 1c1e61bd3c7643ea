package pinecone

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/internal/where"
)

// whereDoc is a Pinecone metadata filter.
type whereDoc = where.Doc

// syntax is Pinecone's metadata filter language: presence by $exists
// ($ne holds for a record without the field), and $in on a list of
// strings holds when the list holds one of the values.
var syntax = where.Syntax{
	Dialect:    Dialect,
	SourceType: kSType,
	SourceName: kSName,
	Field:      metaKey,
	Present:    where.Exists,
	Holds:      where.InOne,
	Raw: func(fragment []byte) (any, error) {
		var obj map[string]json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(fragment)).Decode(&obj); err != nil || len(obj) == 0 {
			return nil, errors.New("a pinecone raw fragment must be a JSON object holding a metadata filter")
		}
		return json.RawMessage(fragment), nil
	},
}

// visible is the metadata filter of a user filter (nil for every record);
// false when the filter cannot match.
func (c *collection) visible(f filter.Expr) (any, bool, error) {
	w, fold, err := syntax.Compile(f, c.cfg.Schema)
	if err != nil || fold == filter.Never {
		return nil, false, err
	}
	return w, true, nil
}
