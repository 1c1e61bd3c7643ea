package mongotest

import (
	"embed"
	"fmt"
	"path"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.yaml.in/yaml/v3"
)

//go:embed mql
var mqlFS embed.FS

// opDef is an operator or stage as MongoDB's MQL specifications define it.
type opDef struct {
	Name      string   `yaml:"name"`
	Type      []string `yaml:"type"`
	Encode    string   `yaml:"encode"`
	Arguments []argDef `yaml:"arguments"`
}

type argDef struct {
	Name        string   `yaml:"name"`
	Type        []string `yaml:"type"`
	Optional    bool     `yaml:"optional"`
	MergeObject bool     `yaml:"mergeObject"`
	Variadic    string   `yaml:"variadic"`
	Arguments   []argDef `yaml:"arguments"`
}

// spec holds the definitions by kind ("stage", "query", "search",
// "accumulator") and name ("$match", "text").
type spec map[string]map[string]*opDef

func loadSpec() (spec, error) {
	s := spec{}
	for _, kind := range []string{"stage", "query", "search", "accumulator"} {
		s[kind] = map[string]*opDef{}
		entries, err := mqlFS.ReadDir("mql/" + kind)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			raw, err := mqlFS.ReadFile(path.Join("mql", kind, e.Name()))
			if err != nil {
				return nil, err
			}
			var d opDef
			if err := yaml.Unmarshal(raw, &d); err != nil {
				return nil, fmt.Errorf("mongotest: %s/%s: %w", kind, e.Name(), err)
			}
			s[kind][d.Name] = &d
		}
	}
	return s, nil
}

// pipeline checks every stage of a pipeline.
func (s spec) pipeline(stages bson.A) error {
	for i, st := range stages {
		d, ok := st.(bson.D)
		if !ok || len(d) != 1 {
			return fmt.Errorf("stage %d: a stage is a document with one field", i)
		}
		def := s["stage"][d[0].Key]
		if def == nil {
			return fmt.Errorf("stage %d: %s is not an aggregation stage", i, d[0].Key)
		}
		if i > 0 && has(def.Type, "inputStage") {
			return fmt.Errorf("stage %d: %s must be the first stage", i, d[0].Key)
		}
		if err := s.args(def, d[0].Value); err != nil {
			return fmt.Errorf("%s: %w", d[0].Key, err)
		}
	}
	return nil
}

func has(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// args checks an operator's value against its arguments.
func (s spec) args(def *opDef, v any) error {
	switch def.Encode {
	case "single":
		if len(def.Arguments) != 1 {
			return nil
		}
		return s.arg(def.Arguments[0], v)
	case "object":
		d, ok := v.(bson.D)
		if !ok {
			return fmt.Errorf("takes a document, not %T", v)
		}
		return s.fields(def.Arguments, d)
	}
	return nil // array encodings: positional, not checked
}

// fields checks a document of named arguments: every field an argument
// (or, for a merged argument, an operator of its type), every required
// argument there.
func (s spec) fields(args []argDef, d bson.D) error {
	seen := map[string]bool{}
	var merged *argDef
	for i := range args {
		if args[i].MergeObject {
			merged = &args[i]
		}
	}
	for _, e := range d {
		var a *argDef
		for i := range args {
			if args[i].Name == e.Key && !args[i].MergeObject {
				a = &args[i]
			}
		}
		if a == nil {
			if merged == nil {
				return fmt.Errorf("unknown argument %q", e.Key)
			}
			seen[merged.Name] = true
			if err := s.merged(*merged, e); err != nil {
				return err
			}
			continue
		}
		seen[a.Name] = true
		if err := s.arg(*a, e.Value); err != nil {
			return fmt.Errorf("%s: %w", e.Key, err)
		}
	}
	for _, a := range args {
		if !a.Optional && !seen[a.Name] && a.Variadic == "" {
			return fmt.Errorf("argument %q is required", a.Name)
		}
	}
	return nil
}

// merged checks a field of a merged argument: a search operator in $search
// ({"text": {...}}), an accumulator in $group ({"n": {"$sum": 1}}).
func (s spec) merged(a argDef, e bson.E) error {
	switch {
	case has(a.Type, "searchOperator"):
		return s.searchOp(bson.D{e})
	case has(a.Type, "accumulator"):
		d, ok := e.Value.(bson.D)
		if !ok || len(d) != 1 || s["accumulator"][d[0].Key] == nil {
			return fmt.Errorf("%s: not an accumulator", e.Key)
		}
	}
	return nil
}

// arg checks one argument's value against its types.
func (s spec) arg(a argDef, v any) error {
	if a.Variadic == "array" {
		xs, ok := v.(bson.A)
		if !ok {
			return fmt.Errorf("takes a list")
		}
		for _, x := range xs {
			if err := s.typed(a, x); err != nil {
				return err
			}
		}
		return nil
	}
	if a.Variadic == "object" {
		d, ok := v.(bson.D)
		if !ok {
			return fmt.Errorf("takes a document")
		}
		for _, e := range d {
			if err := s.typed(a, e.Value); err != nil {
				return fmt.Errorf("%s: %w", e.Key, err)
			}
		}
		return nil
	}
	return s.typed(a, v)
}

// typed checks a value against any of an argument's types.
func (s spec) typed(a argDef, v any) error {
	var errs []string
	for _, t := range a.Type {
		err := s.oneType(t, a, v)
		if err == nil {
			return nil
		}
		errs = append(errs, err.Error())
	}
	return fmt.Errorf("%s", strings.Join(errs, "; or "))
}

func (s spec) oneType(t string, a argDef, v any) error {
	switch t {
	case "string":
		if _, ok := v.(string); ok {
			return nil
		}
	case "int":
		switch x := v.(type) {
		case int32, int64:
			return nil
		case float64:
			if x == float64(int64(x)) {
				return nil
			}
		}
	case "number":
		switch v.(type) {
		case int32, int64, float64, bson.Decimal128:
			return nil
		}
	case "bool":
		if _, ok := v.(bool); ok {
			return nil
		}
	case "null":
		if v == nil {
			return nil
		}
	case "array":
		if _, ok := v.(bson.A); ok {
			return nil
		}
	case "binData":
		if _, ok := v.(bson.Binary); ok {
			return nil
		}
	case "object":
		if d, ok := v.(bson.D); ok {
			if len(a.Arguments) > 0 {
				return s.fields(a.Arguments, d)
			}
			return nil
		}
	case "query":
		return s.query(v)
	case "pipeline":
		if xs, ok := v.(bson.A); ok {
			return s.pipeline(xs)
		}
	case "searchOperator":
		if d, ok := v.(bson.D); ok {
			return s.searchOp(d)
		}
		if xs, ok := v.(bson.A); ok && has(a.Type, "array") {
			for _, x := range xs {
				d, ok := x.(bson.D)
				if !ok {
					return fmt.Errorf("a clause is a search operator")
				}
				if err := s.searchOp(d); err != nil {
					return err
				}
			}
			return nil
		}
	case "searchPath":
		switch x := v.(type) {
		case string:
			return nil
		case bson.A:
			for _, p := range x {
				if _, ok := p.(string); !ok {
					return fmt.Errorf("a path is a string")
				}
			}
			return nil
		}
	default:
		return nil // expressions, dates, ids and the rest: not checked
	}
	return fmt.Errorf("%v is not a %s", v, t)
}

// query checks an MQL query: top-level operators ($and, $or, ...) and
// fields holding a value or field operators ($eq, $in, ...).
func (s spec) query(v any) error {
	d, ok := v.(bson.D)
	if !ok {
		return fmt.Errorf("a query is a document")
	}
	for _, e := range d {
		if strings.HasPrefix(e.Key, "$") {
			def := s["query"][e.Key]
			if def == nil || !has(def.Type, "query") {
				return fmt.Errorf("%s is not a query operator", e.Key)
			}
			if err := s.args(def, e.Value); err != nil {
				return fmt.Errorf("%s: %w", e.Key, err)
			}
			continue
		}
		ops, ok := e.Value.(bson.D)
		if !ok || len(ops) == 0 || !strings.HasPrefix(ops[0].Key, "$") {
			continue // equality with a value
		}
		for _, op := range ops {
			def := s["query"][op.Key]
			if def == nil || !has(def.Type, "fieldQuery") {
				return fmt.Errorf("field %s: %s is not a field query operator", e.Key, op.Key)
			}
			if err := s.args(def, op.Value); err != nil {
				return fmt.Errorf("field %s: %s: %w", e.Key, op.Key, err)
			}
		}
	}
	return nil
}

// searchOp checks an Atlas Search operator: {"name": {arguments}}.
func (s spec) searchOp(d bson.D) error {
	if len(d) != 1 {
		return fmt.Errorf("a search operator is a document with one field")
	}
	def := s["search"][d[0].Key]
	if def == nil {
		return fmt.Errorf("%s is not an Atlas Search operator", d[0].Key)
	}
	if err := s.args(def, d[0].Value); err != nil {
		return fmt.Errorf("%s: %w", d[0].Key, err)
	}
	return nil
}
