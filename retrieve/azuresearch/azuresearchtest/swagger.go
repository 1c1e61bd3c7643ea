package azuresearchtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// openAPI3 converts Azure's Swagger 2.0 document into the OpenAPI 3.0 form
// the validator reads, mechanically and without changing what it allows:
//   - definitions become components/schemas and every $ref follows them;
//   - a body parameter becomes the requestBody, other parameters take their
//     type as a schema, #/parameters references are put in place;
//   - a response's schema becomes its application/json content;
//   - x-nullable: true becomes nullable: true;
//   - a polymorphic base (discriminator: kind, with subtypes that allOf it
//     and name their x-ms-discriminator-value) becomes a oneOf of its
//     subtypes, each held to its own kind: where the document says "a
//     VectorQuery", a value must be one of the kinds it declares.
func openAPI3(swagger []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(swagger, &doc); err != nil {
		return nil, fmt.Errorf("swagger: %w", err)
	}
	if doc["swagger"] != "2.0" {
		return nil, fmt.Errorf("swagger: not a Swagger 2.0 document")
	}
	defs, _ := doc["definitions"].(map[string]any)
	params, _ := doc["parameters"].(map[string]any)
	schemas := map[string]any{}
	for name, d := range defs {
		schemas[name] = d
	}
	// Polymorphic bases: the base's own schema moves to NAMEBase, and
	// NAME becomes the oneOf its references mean.
	for _, base := range slices.Sorted(maps.Keys(defs)) {
		b, _ := defs[base].(map[string]any)
		prop, ok := b["discriminator"].(string)
		if !ok {
			continue
		}
		own := maps.Clone(b)
		delete(own, "discriminator")
		schemas[base+"Base"] = own
		var subs []any
		mapping := map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			s, _ := defs[name].(map[string]any)
			value, ok := s["x-ms-discriminator-value"].(string)
			if !ok || !refersTo(s["allOf"], base) {
				continue
			}
			sub := maps.Clone(s)
			delete(sub, "x-ms-discriminator-value")
			sub["allOf"] = append(retarget(s["allOf"], base, base+"Base"),
				map[string]any{"properties": map[string]any{prop: map[string]any{"enum": []any{value}}}})
			schemas[name] = sub
			ref := "#/components/schemas/" + name
			subs = append(subs, map[string]any{"$ref": ref})
			mapping[value] = ref
		}
		if len(subs) == 0 {
			return nil, fmt.Errorf("swagger: %s has a discriminator but no subtypes", base)
		}
		schemas[base] = map[string]any{"oneOf": subs, "discriminator": map[string]any{"propertyName": prop, "mapping": mapping}}
	}
	paths := map[string]any{}
	for p, item := range doc["paths"].(map[string]any) {
		ops := map[string]any{}
		for method, o := range item.(map[string]any) {
			op := maps.Clone(o.(map[string]any))
			var out []any
			for _, raw := range op["parameters"].([]any) {
				prm := raw.(map[string]any)
				if ref, ok := prm["$ref"].(string); ok {
					prm = params[strings.TrimPrefix(ref, "#/parameters/")].(map[string]any)
				}
				if prm["in"] == "body" {
					op["requestBody"] = map[string]any{"required": prm["required"] == true,
						"content": map[string]any{"application/json": map[string]any{"schema": prm["schema"]}}}
					continue
				}
				schema := map[string]any{}
				for _, k := range []string{"type", "format", "enum", "items", "minimum", "maximum"} {
					if v, ok := prm[k]; ok {
						schema[k] = v
					}
				}
				out = append(out, map[string]any{"name": prm["name"], "in": prm["in"], "required": prm["required"] == true, "schema": schema})
			}
			op["parameters"] = out
			resps := map[string]any{}
			for code, r := range op["responses"].(map[string]any) {
				rm := r.(map[string]any)
				nr := map[string]any{"description": rm["description"]}
				if s, ok := rm["schema"]; ok {
					nr["content"] = map[string]any{"application/json": map[string]any{"schema": s}}
				}
				resps[code] = nr
			}
			op["responses"] = resps
			ops[method] = op
		}
		paths[p] = ops
	}
	out := map[string]any{
		"openapi":    "3.0.3",
		"info":       doc["info"],
		"paths":      paths,
		"components": map[string]any{"schemas": schemas},
	}
	fix(out)
	return json.Marshal(out)
}

func refersTo(allOf any, base string) bool {
	for _, a := range asList(allOf) {
		if m, ok := a.(map[string]any); ok && m["$ref"] == "#/definitions/"+base {
			return true
		}
	}
	return false
}

func retarget(allOf any, from, to string) []any {
	var out []any
	for _, a := range asList(allOf) {
		if m, ok := a.(map[string]any); ok && m["$ref"] == "#/definitions/"+from {
			a = map[string]any{"$ref": "#/definitions/" + to}
		}
		out = append(out, a)
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// fix rewrites references and nullability throughout.
func fix(v any) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, "#/definitions/") {
			x["$ref"] = "#/components/schemas/" + strings.TrimPrefix(ref, "#/definitions/")
			// OpenAPI 3.0 ignores a $ref's siblings (readOnly, x-nullable).
			for k := range x {
				if k != "$ref" {
					delete(x, k)
				}
			}
		}
		if n, ok := x["x-nullable"]; ok {
			delete(x, "x-nullable")
			if n == true {
				x["nullable"] = true
			}
		}
		for _, c := range x {
			fix(c)
		}
	case []any:
		for _, c := range x {
			fix(c)
		}
	}
}
